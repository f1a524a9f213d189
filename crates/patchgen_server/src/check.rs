//! One config checked as the editor holds it: evaluated from the open
//! buffers (`patchgen_lint::lint_buffers` over a `patchgen_config::Overlay`),
//! linted, generated (ruff's rejection included), and turned into LSP
//! diagnostics for the config's own buffer. Runs on a worker thread;
//! nothing here touches the connection.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lsp_types::{
    CodeDescription, DiagnosticRelatedInformation, DiagnosticSeverity, Location as LspLocation, NumberOrString,
    Position, Range, Url,
};
use patchgen_config::Overlay;
use patchgen_core::project::{Project, resolve};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_lint::{GeneratedDef, Options};

use crate::docs::DocLinks;
use crate::text::range_of;

/// Whether a file is a patch config the server checks.
pub fn is_config(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with("_patch_gen_config.py"))
}

/// What checking one config found.
pub struct Checked {
    /// Diagnostics of the config's buffer.
    pub diagnostics: Vec<lsp_types::Diagnostic>,
    /// The project files the result depends on (resolved).
    pub files: Vec<PathBuf>,
    /// Config definitions and the generated lines they produced.
    pub generated: Vec<GeneratedDef>,
    /// How long the check took.
    pub took: Duration,
}

/// The dotted module of `path` under `package_root` (`None` outside it).
pub fn module_name(package_root: &Path, path: &Path) -> Option<String> {
    let rel_path = resolve(path);
    let rel = rel_path.strip_prefix(resolve(package_root)).ok()?;
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".py")?;
    if stem != "__init__" {
        parts.push(stem.to_string());
    }
    let ok = !parts.is_empty() && parts.iter().all(|p| !p.is_empty() && !p.contains('.'));
    ok.then(|| parts.join("."))
}

/// Check the config at `path` (its text is in `overlay`); `None` when the
/// file is not a module of a patchgen project (nothing to say about it).
pub fn check(
    path: &Path,
    overlay: Overlay,
    links: &DocLinks,
    with_ruff: bool,
    env: patchgen_core::settings::Env,
) -> Option<Checked> {
    let started = std::time::Instant::now();
    let text = overlay.get(path).map(str::to_string).or_else(|| {
        patchgen_cache::bounded::read_to_string(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE).ok()
    })?;
    let project = Project::find(path.parent()?).ok()?;
    let module = module_name(&project.package_root(), path)?;
    let options = Options {
        modules: vec![module],
        project: Some(project.root.clone()),
        no_cache: true,
        jobs: Some(1),
        env,
        ..Options::default()
    };
    let lsp = |d: &Diagnostic| to_lsp(d, path, &text, &overlay, links);
    let (diagnostics, files, generated) =
        match patchgen_lint::lint_buffers(&options, &project.root, overlay.clone(), with_ruff) {
            Ok(found) => {
                let r = &found.report;
                let all = r.errors.iter().chain(&r.diagnostics).chain(&found.generation);
                (all.map(lsp).collect(), found.files.iter().map(|f| resolve(f)).collect(), found.generated)
            }
            // The run could not start (a bad `[tool.patchgen.lint]` selector, ...): said at the top of
            // the file, with the place at fault (the pyproject's line) as related information.
            Err(e) => {
                let mut d =
                    patchgen_diagnostics::codes::PROJECT_ERROR.diagnostic(e.to_string()).at(Location::file(path));
                if let Some(at) = e.location() {
                    d = d.related(at, "the setting at fault");
                }
                (vec![lsp(&d)], vec![resolve(path)], Vec::new())
            }
        };
    Some(Checked { diagnostics, files, generated, took: started.elapsed() })
}

/// What a check that hit a bug publishes: one error at the top of the file.
pub fn internal_error() -> Checked {
    let d = lsp_types::Diagnostic {
        severity: Some(DiagnosticSeverity::ERROR),
        source: Some("patchgen".to_string()),
        message: "patchgen: internal error while checking this config; this is a bug in patchgen, please report it with the config".to_string(),
        ..lsp_types::Diagnostic::default()
    };
    Checked { diagnostics: vec![d], files: Vec::new(), generated: Vec::new(), took: Duration::ZERO }
}

/// The text of a file a location names: the buffer, else the file on disk.
fn text_of(path: &Path, overlay: &Overlay) -> Option<String> {
    overlay
        .get(path)
        .map(str::to_string)
        .or_else(|| patchgen_cache::bounded::read_to_string(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE).ok())
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || resolve(a) == resolve(b)
}

/// A patchgen diagnostic as an LSP diagnostic of the buffer of `path`
/// (`text`). One located in another file is shown at the top of this one,
/// its place named in the message and as related information.
pub fn to_lsp(d: &Diagnostic, path: &Path, text: &str, overlay: &Overlay, links: &DocLinks) -> lsp_types::Diagnostic {
    let (range, elsewhere) = match &d.location {
        Some(loc) if same_file(&loc.path, path) => (range_of(text, loc), None),
        Some(loc) => (Range::default(), Some(loc.clone())),
        None => (Range::default(), None),
    };
    let mut message = match &elsewhere {
        Some(loc) => format!("{loc}: {}", d.message),
        None => d.message.clone(),
    };
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let mut related: Vec<DiagnosticRelatedInformation> = Vec::new();
    for (loc, msg) in elsewhere
        .iter()
        .map(|l| (l, "reported here"))
        .chain(d.related.iter().map(|r| (&r.location, r.message.as_str())))
    {
        let Ok(uri) = Url::from_file_path(&loc.path) else { continue };
        let range = match text_of(&loc.path, overlay) {
            Some(t) => range_of(&t, loc),
            None => Range::new(
                Position::new(loc.line.saturating_sub(1) as u32, 0),
                Position::new(loc.line.saturating_sub(1) as u32, 0),
            ),
        };
        related.push(DiagnosticRelatedInformation { location: LspLocation { uri, range }, message: msg.to_string() });
    }
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(d.code.clone())),
        code_description: links.url(&d.code).map(|href| CodeDescription { href }),
        source: Some("patchgen".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        // The fix travels with the diagnostic: the code action reads it back.
        data: Some(serde_json::json!({ "name": d.name, "fix": d.the_fix() })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_under_the_package_root() {
        let root = Path::new("/p");
        assert_eq!(
            module_name(root, Path::new("/p/pkg/models/q/q_gpu_patch_gen_config.py")).as_deref(),
            Some("pkg.models.q.q_gpu_patch_gen_config")
        );
        assert_eq!(module_name(root, Path::new("/p/pkg/__init__.py")).as_deref(), Some("pkg"));
        assert_eq!(module_name(root, Path::new("/elsewhere/a.py")), None);
        assert_eq!(module_name(root, Path::new("/p/pkg/notes.txt")), None);
        assert!(is_config(Path::new("/p/q_gpu_patch_gen_config.py")));
        assert!(!is_config(Path::new("/p/helpers.py")));
    }
}
