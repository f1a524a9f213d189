//! After the port: every config generated against the new upstream (first
//! on the search path, before the project's own; its
//! `.py` and `.diff` written when they changed), then `lint` at the new
//! pin. A config that still holds conflict markers is not generated (its
//! evaluation stops at the first marker, `PGE011`).

use rayon::prelude::*;

use patchgen_core::error::RunError;
use patchgen_core::pipeline::{Context, Failure};
use patchgen_core::survey::modules::Version;
use patchgen_core::upstream::SearchPath;
use patchgen_diagnostics::codes;

use crate::Options;
use crate::report::{BumpReport, Generation};

/// Regenerate `modules` against `to`; with `dry` (a bump from a version to
/// itself) nothing is written.
pub fn regenerate(
    mut ctx: Context,
    to: &Version,
    modules: &[String],
    opts: &Options,
    dry: bool,
    report: &mut BumpReport,
    pool: &rayon::ThreadPool,
) -> Result<(), RunError> {
    // The new upstream first, then where the project finds everything else.
    let paths = std::iter::once(to.upstream.location.clone())
        .chain(ctx.search.entries.iter().map(|e| e.path().to_path_buf()))
        .collect();
    let mut search = SearchPath::new(paths);
    search.drop_digests();
    ctx.search = search;
    let results: Vec<(Generation, bool)> = pool.install(|| {
        modules
            .par_iter()
            .map(|m| match ctx.generate(m, &opts.config_name, None) {
                Ok(g) => {
                    let mut wrote = false;
                    if !dry {
                        for (path, text) in [(&g.py_path, &g.py), (&g.diff_path, &g.diff)] {
                            if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
                                if let Err(e) = patchgen_core::atomic::write(path, text) {
                                    let d = codes::WRITE_ERROR
                                        .diagnostic(format!("{}: {e}", path.display()))
                                        .config(m.clone());
                                    return (Generation::Failed(Box::new(d)), wrote);
                                }
                                wrote = true;
                            }
                        }
                    }
                    (Generation::Ok, wrote)
                }
                Err(Failure::Eval(e)) if e.code == Some(codes::UNRESOLVED_BUMP_CONFLICT) => {
                    (Generation::Skipped(format!("unresolved conflicts ({})", e.loc)), false)
                }
                Err(Failure::NotAConfig { .. }) => (Generation::Skipped("not a config".into()), false),
                Err(f) => (Generation::Failed(Box::new(f.diagnostic(m))), false),
            })
            .collect()
    });
    for (c, (g, wrote)) in report.configs.iter_mut().zip(results) {
        c.generation = g;
        c.lint.clear();
        report.generated_written += usize::from(wrote);
    }
    // At the new pin, with the bump's environment (settings from `PATCHGEN_*`).
    let lint = patchgen_lint::run::lint(&opts.lint_options(modules, to), &opts.project_dir);
    if let Ok(lint) = lint {
        for d in lint.diagnostics {
            if let Some(c) = report.configs.iter_mut().find(|c| d.config.as_deref() == Some(c.module.as_str())) {
                c.lint.push(d);
            }
        }
    }
    Ok(())
}
