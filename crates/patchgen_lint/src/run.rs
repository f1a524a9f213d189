//! A lint run: the selected rules over the configs (configs in parallel, then cross-config rules, then
//! suppressions) and the report. Exit codes: 0 clean, 1 findings, 2 usage
//! or project errors (including a config that cannot be evaluated or
//! generated: lint cannot see it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::context::{LintContext, ProjectContext, Shared};
use super::settings::{LintSettings, selects};
use super::{Rule, noqa, rules};
use patchgen_config::{Overlay, ProjectLoader};
use patchgen_core::error::RunError;
use patchgen_core::pipeline::{Context, Failure};
use patchgen_core::progress::Reporter;
use patchgen_core::project::{Project, resolve};
use patchgen_core::settings::{Env, LintFlags, Overrides, Resolved};
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::source::{self, Upstream, WheelCache};
use patchgen_core::upstream::SearchPath;
use patchgen_diagnostics::{Diagnostic, Location, Severity};

/// Everything a lint run needs: the command's arguments, parsed once.
#[derive(Debug, Clone)]
pub struct Options {
    /// Config modules to lint (empty: every discovered config).
    pub modules: Vec<String>,
    /// Rules to run instead of the defaults: codes, prefixes (PG1) or ALL.
    pub select: Option<Vec<String>>,
    /// Rules to add to the selection.
    pub extend_select: Vec<String>,
    /// Rules to leave out.
    pub ignore: Vec<String>,
    /// Lint against another upstream: a directory, a .whl file or a version number.
    pub upstream: Option<String>,
    /// The PatchConfig variable in each config module.
    pub config_name: String,
    /// Find the project from this directory instead of the working directory.
    pub project: Option<PathBuf>,
    /// Never run pip for `upstream` VERSION (the wheel must be cached).
    pub no_download: bool,
    /// Parallel jobs (`None`: the settings', else one per CPU).
    pub jobs: Option<usize>,
    /// Neither read nor write the result cache.
    pub no_cache: bool,
    /// Keep the cache's note (hit, or why not) in the report.
    pub verbose: bool,
    /// `--unsafe-fixes`: unsafe fixes count as fixable (and `--fix` applies them).
    pub unsafe_fixes: bool,
    /// The environment the settings and the upstream search read (the
    /// binary's snapshot; the default is empty).
    pub env: Env,
    /// Told when `upstream` VERSION is fetched.
    pub reporter: Reporter,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            modules: Vec::new(),
            select: None,
            extend_select: Vec::new(),
            ignore: Vec::new(),
            upstream: None,
            config_name: "config".into(),
            project: None,
            no_download: false,
            jobs: None,
            no_cache: false,
            verbose: false,
            unsafe_fixes: false,
            env: Env::default(),
            reporter: Reporter::default(),
        }
    }
}

/// Which rule's documentation `patchgen rule` prints.
#[derive(Debug, Clone)]
pub enum RuleQuery {
    /// One rule, by code (PG101) or name (dead-patch-target).
    One(String),
    /// Every rule, in code order.
    All,
}

/// The outcome of a lint run.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct LintReport {
    /// The upstream version linted against.
    pub upstream: String,
    /// Configs linted.
    pub configs: usize,
    /// Codes of the rules that ran.
    pub rules: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// Configs lint could not read (evaluation or generation failed).
    pub errors: Vec<Diagnostic>,
    /// Findings silenced by `noqa` or per-file-ignores.
    pub suppressed: usize,
    /// What `--fix`, `--diff` or `--add-noqa` did (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<super::fix::FixOutcome>,
    /// What the result cache did (`-v`; not part of the report).
    #[serde(skip)]
    pub cache_note: Option<String>,
    /// `--unsafe-fixes` was given: unsafe fixes count as fixable.
    #[serde(skip)]
    pub unsafe_fixes: bool,
}

impl LintReport {
    /// 2 when a config could not be read; else 1 when findings remain
    /// (`--diff`: when it would change a file; `--add-noqa`: never), 0.
    pub fn exit_code(&self) -> i32 {
        use super::fix::Mode;
        if !self.errors.is_empty() {
            return 2;
        }
        let findings = match &self.fixed {
            Some(f) if f.mode == Mode::Diff => !f.files.is_empty(),
            Some(f) if f.mode == Mode::AddNoqa => false,
            _ => !self.diagnostics.is_empty(),
        };
        i32::from(findings)
    }

    /// `(code, name, count)` per rule that fired, most frequent first.
    pub fn statistics(&self) -> Vec<(String, String, usize)> {
        let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for d in &self.diagnostics {
            *counts.entry((&d.code, &d.name)).or_default() += 1;
        }
        let mut out: Vec<_> = counts.into_iter().map(|((c, n), k)| (c.to_string(), n.to_string(), k)).collect();
        out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        out
    }
}

/// The rules `settings` (flags, environment and pyproject resolved) select.
pub fn selected_rules(settings: &LintSettings) -> Result<Vec<&'static Rule>, RunError> {
    let select: Option<&Vec<String>> = settings.select.as_ref();
    let extend: Vec<&String> = settings.extend_select.iter().collect();
    let ignore: Vec<&String> = settings.ignore.iter().collect();
    let all = select.into_iter().flatten().chain(extend.iter().copied()).chain(ignore.iter().copied());
    for s in all {
        if !rules::RULES.iter().any(|r| selects(s, r.code, r.name)) {
            return Err(RunError::UnknownSelector { selector: s.clone() });
        }
    }
    Ok(rules::RULES
        .iter()
        .filter(|r| {
            let on = match select {
                Some(sel) => sel.iter().any(|s| selects(s, r.code, r.name)),
                None => r.default_on,
            } || extend.iter().any(|s| selects(s, r.code, r.name));
            on && !ignore.iter().any(|s| selects(s, r.code, r.name))
        })
        .collect())
}

/// A config lint cannot see, as `PG000`: the failure's own diagnostic
/// (message, help, and the place with its column and range where known)
/// under lint's code.
fn failure_diagnostic(module: &str, failure: &Failure) -> Diagnostic {
    Diagnostic {
        code: "PG000".to_string(),
        name: "config-error".to_string(),
        severity: Severity::Error,
        ..failure.diagnostic(module)
    }
}

/// The upstream lint reads: `--upstream` resolved as `survey` resolves
/// `--to`, else the search path `check` uses.
fn upstream_for(args: &Options, project: &Project, cwd: &Path) -> Result<(Upstream, Option<PathBuf>), RunError> {
    let package_root = project.package_root();
    match args.upstream.as_deref() {
        Some(arg) => {
            let cache = WheelCache {
                dir: WheelCache::default_dir(&args.env, &project.root),
                package: "transformers".into(),
                download: !args.no_download,
                reporter: args.reporter.clone(),
            };
            let up =
                source::resolve(arg, cwd, &cache).map_err(|source| RunError::Upstream { flag: "upstream", source })?;
            let location = up.location.clone();
            let search = SearchPath::new(vec![location.clone(), package_root]);
            Ok((Upstream { search, ..up }, Some(location)))
        }
        None => {
            let search = SearchPath::from_env(&args.env, &project.root, cwd, &package_root);
            let version = search.transformers_version();
            Ok((Upstream { arg: String::new(), version, location: PathBuf::new(), search }, None))
        }
    }
}

/// What every lint run settles before it looks at a config: the project,
/// the settings, the rules, the upstream and the modules to lint.
struct Setup {
    project_dir: PathBuf,
    resolved: Resolved,
    settings: LintSettings,
    rules: Vec<&'static Rule>,
    upstream: Upstream,
    version_label: String,
    pipeline: Context,
    modules: Vec<String>,
    explicit: bool,
}

/// The common start of [`lint`] and [`lint_buffers`]: `overlay`'s texts are
/// read instead of the files at their paths.
fn setup(args: &Options, cwd: &Path, overlay: Overlay) -> Result<Setup, RunError> {
    let project_dir = match &args.project {
        Some(p) if p.is_relative() => cwd.join(p),
        Some(p) => p.clone(),
        None => cwd.to_path_buf(),
    };
    let project = Project::find(&project_dir)?;
    let flags = LintFlags {
        select: args.select.clone(),
        extend_select: args.extend_select.clone(),
        ignore: args.ignore.clone(),
    };
    let overrides = Overrides { jobs: args.jobs, no_cache: args.no_cache, ..Overrides::default() };
    let resolved =
        Resolved::resolve(&overrides, &args.env, &project).map_err(RunError::Settings)?.with_lint_flags(&flags);
    let settings = LintSettings::from_options(&resolved.lint, &project.settings.package_prefix);
    let rules = selected_rules(&settings)?;
    let (upstream, location) = upstream_for(args, &project, cwd)?;
    let version_label = upstream.version.clone();
    let mut pipeline = Context::new(project, &project_dir, None, &args.env);
    if !overlay.is_empty() {
        pipeline.loader = ProjectLoader::with_overlay(pipeline.loader.roots().to_vec(), overlay);
    }
    pipeline.loader.set_max_file_size(resolved.max_file_size);
    if let Some(location) = location {
        pipeline.search = SearchPath::new(vec![location, pipeline.project.package_root()]);
    }
    let modules = pipeline.select_modules(&args.modules, "")?;
    let explicit = !args.modules.is_empty();
    Ok(Setup { project_dir, resolved, settings, rules, upstream, version_label, pipeline, modules, explicit })
}

/// Run lint. `cwd` resolves relative paths; the project is found from
/// `args.project` (else `cwd`).
pub fn lint(args: &Options, cwd: &Path) -> Result<LintReport, RunError> {
    let Setup { project_dir, resolved, settings, rules, upstream, version_label, pipeline, modules, explicit } =
        setup(args, cwd, Overlay::default())?;
    // The result cache: a hit answers the whole run (see `cached`).
    let cache = super::cached::open(&resolved, &pipeline.project, cwd);
    let key = super::cached::key(args, &resolved.lint, &modules, &project_dir);
    let mut note = match &cache {
        Ok(None) => None,
        Err(why) => Some(format!("off: {why}")),
        Ok(Some(c)) => match c.lookup::<LintReport>(&key, &pipeline.fresh_prober(c)) {
            patchgen_cache::Lookup::Hit(mut report) => {
                c.save_files();
                report.cache_note = args.verbose.then(|| "hit".to_string());
                return Ok(report);
            }
            patchgen_cache::Lookup::Miss(m) => Some(format!("miss: {m}")),
        },
    };
    let before = match &cache {
        Ok(Some(c)) => super::cached::before(&pipeline, &upstream.search, &pipeline.fresh_prober(c)),
        _ => Vec::new(),
    };
    let shared = match &cache {
        Ok(Some(_)) => Shared::new(pipeline, Version::new(upstream), settings),
        // Nothing will be stored.
        _ => shared_without_digests(pipeline, upstream, settings),
    };
    let pool = patchgen_core::workers::pool(resolved.jobs)?;
    let no_extra = None::<fn(&[LintContext]) -> ()>;
    let (mut report, _) =
        pool.install(|| run(&shared, &modules, &[], &args.config_name, explicit, &rules, version_label, no_extra));
    if let Ok(Some(c)) = &cache {
        let inputs = super::cached::inputs(before, &shared);
        if let Err(why) = super::cached::store(c, &key, &inputs, &report, &shared.pipeline) {
            note = note.map(|n| format!("{n}; {why}"));
        }
    }
    report.cache_note = note.filter(|_| args.verbose);
    report.unsafe_fixes = args.unsafe_fixes;
    // The process exits next: freeing every syntax tree costs only time.
    std::mem::forget(shared);
    Ok(report)
}

/// Configs linted as an editor holds them ([`lint_buffers`]).
#[derive(Debug)]
pub struct BufferLint {
    /// What `patchgen lint` would report with these buffers saved.
    pub report: LintReport,
    /// What generation reports about the configs besides lint's findings:
    /// its warnings and notes (`PGW…`, `PGI…`) and ruff's rejection of the
    /// generated code (`PGE…`, placed at the config line behind it).
    pub generation: Vec<Diagnostic>,
    /// The project files evaluation read (each config and the project
    /// modules it imports): a change to any of them changes this result.
    pub files: Vec<PathBuf>,
    /// Each config definition that produced code, and the line of the
    /// checked-in generated file it produced (where that file exists).
    pub generated: Vec<GeneratedDef>,
}

/// A config definition (a replacement or helper) and where its code lands
/// in the checked-in generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedDef {
    /// Its `def`/`class` line in the config.
    pub config: Location,
    /// The generated `def`/`class` line.
    pub generated: Location,
}

/// Lint `args.modules` reading `overlay`'s texts (unsaved editor buffers)
/// instead of the files at their paths; never cached. Besides the report:
/// what generation says of the configs (its warnings; ruff's rejection
/// when `with_ruff`, a ruff that cannot be run being no finding here),
/// which project files the result depends on, and where each config
/// definition's code is in the generated file.
pub fn lint_buffers(args: &Options, cwd: &Path, overlay: Overlay, with_ruff: bool) -> Result<BufferLint, RunError> {
    let Setup { settings, rules, upstream, version_label, pipeline, modules, explicit, .. } =
        setup(args, cwd, overlay)?;
    let siblings = sibling_configs(&pipeline, &modules);
    // Never cached.
    let shared = shared_without_digests(pipeline, upstream, settings);
    let pool = patchgen_core::workers::pool(Some(args.jobs.unwrap_or(1)))?;
    let (report, extra) = pool.install(|| {
        run(&shared, &modules, &siblings, &args.config_name, explicit, &rules, version_label, Some(generated_defs))
    });
    let (mut generation, generated) = extra.unwrap_or_default();
    if with_ruff && report.errors.is_empty() {
        for m in &modules {
            let outcome = pool.install(|| shared.pipeline.generate(m, &args.config_name, None));
            if let Err(f @ Failure::Ruff { error: patchgen_core::normalize::RuffError::Rejected { .. }, .. }) = outcome
            {
                generation.push(f.diagnostic(m));
            }
        }
    }
    let files = shared.pipeline.loader.files_read();
    Ok(BufferLint { report, generation, files, generated })
}

/// The run's context for a result no cache stores: no digest is taken of
/// what it reads (nothing has been read through these search paths yet).
fn shared_without_digests(mut pipeline: Context, mut upstream: Upstream, settings: LintSettings) -> Shared {
    pipeline.search.drop_digests();
    upstream.search.drop_digests();
    Shared::new(pipeline, Version::new(upstream), settings).without_read_digests()
}

/// The other configs of the packages `modules` are in (their directories'
/// `*_patch_gen_config.py` files but `_*`, as discovery finds them): what
/// the project rules compare a config with (PG202's GPU/NPU sibling,
/// PG502's package registry), so a buffer's check sees what a full
/// `patchgen lint` sees.
fn sibling_configs(pipeline: &Context, modules: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in modules {
        let Some((path, false)) = pipeline.loader.find(m) else { continue };
        let (Some(dir), Some((package, _))) = (path.parent(), m.rsplit_once('.')) else { continue };
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| !n.starts_with('_'))
            .filter_map(|n| n.strip_suffix(".py").filter(|s| s.ends_with("_patch_gen_config")).map(str::to_string))
            .collect();
        names.sort();
        for stem in names {
            let sibling = format!("{package}.{stem}");
            if !modules.contains(&sibling) && !out.contains(&sibling) {
                out.push(sibling);
            }
        }
    }
    out
}

/// The generation notes of linted configs and their generated definitions.
fn generated_defs(contexts: &[LintContext]) -> (Vec<Diagnostic>, Vec<GeneratedDef>) {
    let mut notes = Vec::new();
    let mut defs = Vec::new();
    for ctx in contexts {
        notes.extend(ctx.notes.iter().cloned());
        if ctx.checked_in().is_none() {
            continue;
        }
        for o in &ctx.origins {
            defs.push(GeneratedDef {
                config: Location::line(o.config_path.clone(), o.config_line),
                generated: ctx.generated_location(o.gen_start),
            });
        }
    }
    (notes, defs)
}

/// Lint `modules`. With `extra`, it sees every config of `modules` that
/// could be read, whole; without, each config is settled
/// ([`LintContext::settle`]) once its own rules have run. The configs of
/// `context` are read for the project rules only: their own findings,
/// their failures and the project rules' findings in their files are
/// theirs to report, not this run's.
#[allow(clippy::too_many_arguments)]
fn run<T>(
    shared: &Shared,
    modules: &[String],
    context: &[String],
    config_name: &str,
    explicit: bool,
    rules: &[&'static Rule],
    upstream: String,
    extra: Option<impl FnOnce(&[LintContext]) -> T>,
) -> (LintReport, Option<T>) {
    let settle = extra.is_none();
    patchgen_core::timings::mark("lint: set up");
    // Each config is built and its own rules run in one task: no config
    // waits for the slowest one to be built before its rules start.
    // Boxed: a failure is large and rare.
    type Built<'s> = (Result<LintContext<'s>, Box<(String, Failure)>>, Vec<Diagnostic>);
    let built: Vec<Built> = modules
        .par_iter()
        .chain(context.par_iter())
        .map(|m| match LintContext::build(shared, m, config_name) {
            Ok(mut ctx) => {
                let found = if context.contains(&ctx.module) {
                    Vec::new()
                } else {
                    rules.iter().flat_map(|r| (r.check)(&ctx).into_iter().map(|d| ctx.own(d))).collect()
                };
                if settle {
                    ctx.settle();
                }
                (Ok(ctx), found)
            }
            Err(f) => (Err(Box::new((m.clone(), f))), Vec::new()),
        })
        .collect();
    let mut errors = Vec::new();
    let mut contexts = Vec::new();
    let mut found: Vec<Diagnostic> = Vec::new();
    for (b, own) in built {
        found.extend(own);
        match b.map_err(|e| *e) {
            Ok(c) => contexts.push(c),
            Err((m, _)) if context.contains(&m) => {}
            Err((_, Failure::NotAConfig { .. })) if !explicit => {}
            Err((_, Failure::OptionalSkipped { .. })) => {}
            Err((m, f)) => errors.push(failure_diagnostic(&m, &f)),
        }
    }
    let is_context = |ctx: &LintContext| context.contains(&ctx.module);
    patchgen_core::timings::mark("lint: configs generated, parsed and linted");
    let project = ProjectContext { shared, configs: &contexts };
    // The files of the context-only configs: project findings there are theirs.
    let theirs: Vec<PathBuf> = contexts.iter().filter(|c| is_context(c)).map(|c| resolve(&c.config.path)).collect();
    let ours = |d: &Diagnostic| {
        !d.config.as_ref().is_some_and(|m| context.contains(m))
            && !d.location.as_ref().is_some_and(|l| theirs.contains(&resolve(&l.path)))
    };
    for r in rules {
        if let Some(check) = r.check_project {
            found.extend(check(&project).into_iter().filter(|d| context.is_empty() || ours(d)));
        }
    }
    patchgen_core::timings::mark("lint: project rules");
    let owned = contexts.len() - contexts.iter().filter(|c| is_context(c)).count();
    let extra = extra.map(|f| f(&contexts[..owned]));
    // Every lint finding says whether it has a fix (`null` in JSON when not).
    for d in &mut found {
        d.fix.get_or_insert(None);
    }
    let before = found.len();
    let root = shared.project_root().to_path_buf();
    found.retain(|d| !suppressed(shared, &root, d));
    let suppressed = before - found.len();
    sort(&mut found);
    let found = merge_same_line(found);
    let report = LintReport {
        upstream,
        configs: owned,
        rules: rules.iter().map(|r| r.code.to_string()).collect(),
        diagnostics: found,
        errors,
        suppressed,
        fixed: None,
        cache_note: None,
        unsafe_fixes: false,
    };
    std::mem::forget(contexts);
    (report, extra)
}

/// One finding per (code, config line, message): a replacement shared by
/// several configs (an NPU config reusing the GPU one's function) is one
/// edit; the other configs' generated files are kept as related locations.
fn merge_same_line(found: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(found.len());
    for d in found {
        match out
            .iter_mut()
            .rev()
            .take_while(|o| o.location == d.location)
            .find(|o| o.code == d.code && o.message == d.message)
        {
            Some(kept) => {
                for r in d.related {
                    if !kept.related.contains(&r) {
                        kept.related.push(r);
                    }
                }
            }
            None => out.push(d),
        }
    }
    out
}

fn sort(ds: &mut [Diagnostic]) {
    ds.sort_by(|a, b| {
        let key = |d: &Diagnostic| d.location.as_ref().map(|l| (l.path.clone(), l.line, l.column));
        key(a).cmp(&key(b)).then_with(|| a.code.cmp(&b.code)).then_with(|| a.message.cmp(&b.message))
    });
}

/// `# noqa` on the primary line, or a per-file ignore of its file.
fn suppressed(shared: &Shared, root: &Path, d: &Diagnostic) -> bool {
    let Some(loc) = &d.location else { return false };
    let rel = loc.path.strip_prefix(root).unwrap_or(&loc.path).to_string_lossy().replace('\\', "/");
    if shared.settings.ignored_for(&rel).iter().any(|c| selects(c, &d.code, &d.name)) {
        return true;
    }
    if loc.line == 0 {
        return false;
    }
    let Ok(file) = shared.pipeline.loader.parse_file(&loc.path) else {
        return false;
    };
    // The file's line table, not a walk over the lines before it.
    let line =
        if loc.line <= file.line_count() { file.line_range(loc.line, loc.line).trim_end_matches('\n') } else { "" };
    noqa::parse(line).is_some_and(|n| n.suppresses(&d.code))
}

/// Text: `path:line[:col]: CODE [name] message`, then help and related lines.
pub fn render_text(report: &LintReport, cwd: &Path) -> String {
    let mut out = String::new();
    let rel = |p: &Path| p.strip_prefix(cwd).unwrap_or(p).display().to_string();
    for d in report.errors.iter().chain(&report.diagnostics) {
        let place = match &d.location {
            Some(l) => {
                let mut l = l.clone();
                l.path = PathBuf::from(rel(&l.path));
                format!("{l}: ")
            }
            None => d.config.as_ref().map(|c| format!("{c}: ")).unwrap_or_default(),
        };
        out.push_str(&format!("{place}{} [{}] {}\n", d.code, d.name, d.message));
        for r in &d.related {
            let mut l = r.location.clone();
            l.path = PathBuf::from(rel(&l.path));
            out.push_str(&format!("  = {}: {l}\n", r.message));
        }
        if let Some(h) = &d.help {
            out.push_str(&format!("  help: {h}\n"));
        }
    }
    out.push_str(&summary(report));
    out
}

/// The last lines: how many findings, in how many configs, against which
/// upstream; then ruff's lines about fixes (what `--fix` would fix, what
/// it fixed, what `--diff` would, the `noqa` directives added).
pub fn summary(report: &LintReport) -> String {
    use super::fix::{Mode, Selection, hidden, selected};
    let mut out = String::new();
    let n = report.diagnostics.len();
    let plural = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let selection = Selection::new(report.unsafe_fixes);
    let hidden = hidden(&report.diagnostics, selection);
    let all_passed = || format!("All checks passed ({} configs, upstream {}).\n", report.configs, report.upstream);
    match &report.fixed {
        Some(f) if f.mode == Mode::Diff => {
            let hidden = hidden_of(report, f.selection);
            match (f.fixed, hidden) {
                (0, 0) => out.push_str("No errors would be fixed.\n"),
                (0, h) => out.push_str(&format!(
                    "No errors would be fixed ({} available with `--unsafe-fixes`).\n",
                    plural(h, "fix", "fixes")
                )),
                (k, 0) => out.push_str(&format!("Would fix {}.\n", plural(k, "error", "errors"))),
                (k, h) => out.push_str(&format!(
                    "Would fix {} ({} available with `--unsafe-fixes`).\n",
                    plural(k, "error", "errors"),
                    plural(h, "additional fix", "additional fixes")
                )),
            }
        }
        Some(f) if f.mode == Mode::AddNoqa => {
            if f.fixed > 0 {
                out.push_str(&format!("Added {}.\n", plural(f.fixed, "noqa directive", "noqa directives")));
            }
        }
        Some(f) => {
            if f.fixed + n == 0 && report.errors.is_empty() {
                out.push_str(&all_passed());
            } else {
                out.push_str(&format!(
                    "Found {} ({} fixed, {n} remaining).\n",
                    plural(f.fixed + n, "error", "errors"),
                    f.fixed
                ));
            }
            let hidden = hidden_of(report, f.selection);
            if hidden > 0 {
                out.push_str(&format!(
                    "No fixes available ({} can be enabled with the `--unsafe-fixes` option).\n",
                    plural(hidden, "hidden fix", "hidden fixes")
                ));
            }
        }
        None => {
            if n == 0 && report.errors.is_empty() {
                out.push_str(&all_passed());
                return out;
            }
            out.push_str(&format!(
                "Found {n} finding{} in {} configs (upstream {}){}.\n",
                if n == 1 { "" } else { "s" },
                report.configs,
                report.upstream,
                if report.suppressed > 0 { format!("; {} suppressed", report.suppressed) } else { String::new() }
            ));
            let fixable = selected(&report.diagnostics, selection).count();
            // ruff drops the backticks when `--unsafe-fixes` is on.
            let option = if report.unsafe_fixes { "--fix" } else { "`--fix`" };
            let hidden_note = |h: usize| {
                format!("{} can be enabled with the `--unsafe-fixes` option", plural(h, "hidden fix", "hidden fixes"))
            };
            match (fixable, hidden) {
                (0, 0) => {}
                (0, h) => out.push_str(&format!("No fixes available ({}).\n", hidden_note(h))),
                (k, 0) => out.push_str(&format!("[*] {k} fixable with the {option} option.\n")),
                (k, h) => out.push_str(&format!("[*] {k} fixable with the {option} option ({}).\n", hidden_note(h))),
            }
        }
    }
    if let Some(f) = &report.fixed {
        for r in &f.reverted {
            out.push_str(&format!(
                "{}: left as it was: with its fixes `{}` no longer generates ({})\n",
                r.path.display(),
                r.config,
                r.reason
            ));
        }
    }
    out
}

/// Unsafe fixes `selection` leaves out, among the remaining findings.
fn hidden_of(report: &LintReport, selection: super::fix::Selection) -> usize {
    super::fix::hidden(&report.diagnostics, selection)
}

/// `--statistics`: one line per rule.
pub fn render_statistics(report: &LintReport) -> String {
    report.statistics().iter().map(|(c, n, k)| format!("{k:>5}\t{c}\t{n}\n")).collect()
}

/// GitHub workflow commands (`::error file=…,line=…,title=…::message`), as every command writes them.
pub fn render_github(report: &LintReport, cwd: &Path) -> String {
    report.errors.iter().chain(&report.diagnostics).map(|d| patchgen_diagnostics::render::github(d, cwd)).collect()
}

pub fn render_json(report: &LintReport) -> String {
    serde_json::to_string_pretty(report).expect("report serialises") + "\n"
}

/// What `patchgen rule` prints.
pub fn rule_text(query: &RuleQuery) -> Result<String, RunError> {
    let code = match query {
        RuleQuery::All => {
            return Ok(rules::RULES.iter().map(super::docs::rule_markdown).collect::<Vec<_>>().join("\n"));
        }
        RuleQuery::One(code) => code.as_str(),
    };
    match super::rule(code) {
        Some(r) => Ok(super::docs::rule_markdown(r)),
        None => Err(RunError::UnknownRule { code: code.to_string() }),
    }
}
