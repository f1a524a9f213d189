//! `patchgen reference <m>`: a model's upstream sources, straight from the
//! pinned version's wheel and verified against its `RECORD`, written to
//! `<reference_dir>/<m>/v<PIN>/` (protocol step 0.2, without curl and its
//! saved-404 trap). `--old A --new B` writes both versions side by side, a
//! unified diff between them (difflib-exact) and a per-symbol summary.
//!
//! `model` resolves the argument to the HF module name, `pin` finds the
//! version, `summary` compares two module versions; this module reads the
//! wheels and writes the files. Everything is read and checked before the
//! first file is written.

pub mod model;
pub mod pin;
pub mod summary;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::project::Project;
use crate::survey::source::WheelCache;
use crate::upstream::wheel::{Wheel, WheelError, record_digest};
pub use pin::Pin;
use summary::ModuleChanges;

/// Where reference sources go unless `[tool.patchgen] reference_dir` says.
pub const DEFAULT_DIR: &str = ".agents_workspace/hf_reference";

/// The extra kinds of file a multimodal model's reference includes.
pub const MULTIMODAL_KINDS: [&str; 4] = ["configuration", "processing", "image_processing", "video_processing"];

/// What to fetch: a model's sources at one version (`pin`), or at two
/// (`old`, `new`) with their diff.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The HF module name (qwen2_5_vl), a project model directory (qwen2_5vl) or a config module.
    pub model: String,
    /// The upstream version (default: the project's pin).
    pub pin: Option<String>,
    /// With `new`: the version to compare from.
    pub old: Option<String>,
    /// With `old`: the version to compare to.
    pub new: Option<String>,
    /// More files of the model's directory, by kind (configuration, processing, modular, …).
    pub also: Vec<String>,
    /// Never run pip: versions must already be in the wheel cache.
    pub no_download: bool,
    /// The distribution a version number names (`transformers`).
    pub package: String,
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Options {
    pub args: Request,
    /// The directory the project is found from.
    pub cwd: PathBuf,
    /// `None`: `${PATCHGEN_CACHE:-<project root>/.cache}/wheels`.
    pub cache_dir: Option<PathBuf>,
    /// The environment (`PATCHGEN_CACHE`, `PATCHGEN_RUFF*`, the Python search path).
    pub env: crate::settings::Env,
    /// Told when a version is fetched.
    pub reporter: crate::progress::Reporter,
}

/// A file written (or found already equal).
#[derive(Clone, Debug, Serialize)]
pub struct WrittenFile {
    pub member: String,
    pub path: PathBuf,
    pub bytes: usize,
    /// As RECORD spells it.
    pub sha256: String,
    /// `written`, `unchanged` (already there with the same bytes) or
    /// `replaced` (was there with other bytes).
    pub status: &'static str,
}

/// One version's files.
#[derive(Clone, Debug, Serialize)]
pub struct VersionFiles {
    pub version: String,
    pub wheel: PathBuf,
    pub dir: PathBuf,
    pub files: Vec<WrittenFile>,
}

/// One file's diff between the two versions.
#[derive(Clone, Debug, Serialize)]
pub struct FileDiff {
    pub name: String,
    pub lines_added: usize,
    pub lines_removed: usize,
    /// Python files only.
    pub symbols: Option<ModuleChanges>,
}

/// `--old/--new`: the diff file and what it holds.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    pub path: PathBuf,
    pub files: Vec<FileDiff>,
    /// Files only one version has.
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
}

/// What `reference` did.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The HF module name.
    pub model: String,
    /// How the argument was resolved.
    pub resolved_from: String,
    /// The pin (single-version runs).
    pub pin: Option<Pin>,
    pub versions: Vec<VersionFiles>,
    pub diff: Option<DiffReport>,
    pub warnings: Vec<String>,
}

/// A failure: usage (exit 2) or a bad wheel / missing model (exit 1).
pub type ReferenceError = crate::error::RunError;

impl From<WheelError> for ReferenceError {
    fn from(e: WheelError) -> Self {
        ReferenceError::failed(e.to_string())
    }
}

/// A version's files, read and verified, not yet written.
struct Fetched {
    version: String,
    wheel: PathBuf,
    files: Vec<(String, Vec<u8>)>,
}

/// The wheel members to take for `model`: `modeling_<m>.py`, the
/// multimodal extras when the directory has processors, and `--also` kinds.
fn members(
    wheel: &Wheel,
    package: &str,
    model: &str,
    also: &[String],
) -> Result<(Vec<String>, Vec<String>), ReferenceError> {
    let dir = format!("{package}/models/{model}");
    let files = wheel.files_in(&dir);
    let modeling = format!("modeling_{model}.py");
    if !files.contains(&modeling) {
        let models = wheel.subdirs(&format!("{package}/models"));
        let near = patchgen_diagnostics::suggest::nearest(model, models.iter().map(String::as_str), 5);
        let version = wheel.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return Err(ReferenceError::failed(format!(
            "{}: {version} has no model `{model}` ({dir}/{modeling} is not in it)\n  help: nearest model names: {}",
            wheel.path.display(),
            if near.is_empty() { "(none)".to_string() } else { near.join(", ") }
        )));
    }
    let kind_of = |name: &str, kind: &str| name.starts_with(&format!("{kind}_")) && name.ends_with(".py");
    let multimodal = files.iter().any(|f| MULTIMODAL_KINDS[1..].iter().any(|k| kind_of(f, k)));
    let mut wanted: Vec<&str> = Vec::new();
    if multimodal {
        wanted.extend(MULTIMODAL_KINDS);
    }
    wanted.extend(also.iter().map(|s| s.trim().trim_end_matches('_')).filter(|s| !s.is_empty()));
    let mut out = vec![format!("{dir}/{modeling}")];
    let mut warnings = Vec::new();
    for kind in wanted {
        let found: Vec<&String> = files.iter().filter(|f| kind_of(f, kind) && **f != modeling).collect();
        if found.is_empty() && also.iter().any(|a| a.trim().trim_end_matches('_') == kind) {
            warnings.push(format!("--also {kind}: {dir} has no {kind}_*.py"));
        }
        for f in found {
            let m = format!("{dir}/{f}");
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok((out, warnings))
}

fn fetch(
    cache: &WheelCache,
    version: &str,
    model: &str,
    also: &[String],
    warnings: &mut Vec<String>,
) -> Result<Fetched, ReferenceError> {
    let wheel_path = cache.wheel(version).map_err(|e| ReferenceError::failed(e.to_string()))?;
    let mut wheel = Wheel::open(&wheel_path)?;
    let (names, w) = members(&wheel, &cache.package, model, also)?;
    for x in w {
        if !warnings.contains(&x) {
            warnings.push(x);
        }
    }
    let mut files = Vec::new();
    for name in names {
        let bytes = wheel.read_verified(&name)?;
        files.push((name, bytes));
    }
    Ok(Fetched { version: version.to_string(), wheel: wheel_path, files })
}

fn file_name(member: &str) -> &str {
    member.rsplit('/').next().unwrap_or(member)
}

fn write_version(fetched: &Fetched, dir: &Path) -> Result<VersionFiles, ReferenceError> {
    let mut files = Vec::new();
    for (member, bytes) in &fetched.files {
        let path = dir.join(file_name(member));
        let status = match std::fs::read(&path) {
            Ok(old) if old == *bytes => "unchanged",
            Ok(_) => "replaced",
            Err(_) => "written",
        };
        if status != "unchanged" {
            crate::atomic::write_bytes(&path, bytes)
                .map_err(|e| ReferenceError::failed(format!("{}: cannot write: {e}", path.display())))?;
        }
        files.push(WrittenFile {
            member: member.clone(),
            path,
            bytes: bytes.len(),
            sha256: record_digest(bytes),
            status,
        });
    }
    Ok(VersionFiles { version: fetched.version.clone(), wheel: fetched.wheel.clone(), dir: dir.to_path_buf(), files })
}

/// `str.splitlines(keepends=True)` restricted to `\n`, as `readlines()`
/// gives the lines of a file with `\n` line ends.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The unified diff of every file both versions have, and the summary.
fn diff_versions(old: &Fetched, new: &Fetched) -> (String, Vec<FileDiff>, Vec<String>, Vec<String>) {
    let name_set = |f: &Fetched| f.files.iter().map(|(m, _)| file_name(m).to_string()).collect::<Vec<_>>();
    let (a_names, b_names) = (name_set(old), name_set(new));
    let mut text = String::new();
    let mut files = Vec::new();
    for (member, a_bytes) in &old.files {
        let name = file_name(member);
        let Some((_, b_bytes)) = new.files.iter().find(|(m, _)| file_name(m) == name) else {
            continue;
        };
        let (a, b) = (String::from_utf8_lossy(a_bytes), String::from_utf8_lossy(b_bytes));
        let (al, bl) = (lines(&a), lines(&b));
        let diff = patchgen_python::diff::unified_diff(
            &al,
            &bl,
            &format!("v{}/{name}", old.version),
            &format!("v{}/{name}", new.version),
            3,
        );
        let count = |p: char, skip: &str| diff.lines().filter(|l| l.starts_with(p) && !l.starts_with(skip)).count();
        let symbols = if name.ends_with(".py") {
            match (
                patchgen_python::pysource::ParsedFile::parse(PathBuf::from(name), &a),
                patchgen_python::pysource::ParsedFile::parse(PathBuf::from(name), &b),
            ) {
                (Ok(pa), Ok(pb)) => Some(summary::module_changes(&pa, &pb)),
                _ => None,
            }
        } else {
            None
        };
        files.push(FileDiff {
            name: name.to_string(),
            lines_added: count('+', "+++ "),
            lines_removed: count('-', "--- "),
            symbols,
        });
        text.push_str(&diff);
    }
    let only_old = a_names.iter().filter(|n| !b_names.contains(n)).cloned().collect();
    let only_new = b_names.iter().filter(|n| !a_names.contains(n)).cloned().collect();
    (text, files, only_old, only_new)
}

/// `git check-ignore` on the reference directory: a warning when git
/// tracks it; nothing when there is no git or no repository.
fn ignored_warning(root: &Path, dir: &Path) -> Option<String> {
    let rel = dir.strip_prefix(root).ok()?;
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["check-ignore", "-q", "--no-index"])
        .arg(rel.join("x.py"))
        .output()
        .ok()?;
    (out.status.code() == Some(1)).then(|| {
        let top = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
        format!(
            "{} is not ignored by git: reference sources could be committed\n  help: add `{top}/` to {}",
            rel.display(),
            root.join(".gitignore").display()
        )
    })
}

/// Run `reference`.
pub fn run(opts: &Options) -> Result<Report, ReferenceError> {
    let args = &opts.args;
    let project = Project::find(&opts.cwd).ok();
    let root = project.as_ref().map(|p| p.root.clone()).unwrap_or_else(|| opts.cwd.clone());
    let resolved = model::resolve(&args.model, project.as_ref(), &opts.cwd, &args.package, &opts.env)?;
    let cache = WheelCache {
        dir: opts.cache_dir.clone().unwrap_or_else(|| WheelCache::default_dir(&opts.env, &root)),
        package: args.package.clone(),
        download: !args.no_download,
        reporter: opts.reporter.clone(),
    };
    let base = project
        .as_ref()
        .and_then(|p| p.settings.reference_dir.clone())
        .unwrap_or_else(|| root.join(DEFAULT_DIR))
        .join(&resolved.name);
    let mut warnings = Vec::new();
    let mut report = Report {
        model: resolved.name.clone(),
        resolved_from: resolved.how.clone(),
        pin: None,
        versions: Vec::new(),
        diff: None,
        warnings: Vec::new(),
    };
    if let (Some(old), Some(new)) = (&args.old, &args.new) {
        let a = fetch(&cache, old, &resolved.name, &args.also, &mut warnings)?;
        let b = fetch(&cache, new, &resolved.name, &args.also, &mut warnings)?;
        let (text, files, only_old, only_new) = diff_versions(&a, &b);
        report.versions.push(write_version(&a, &base.join(format!("v{old}")))?);
        report.versions.push(write_version(&b, &base.join(format!("v{new}")))?);
        let path = base.join(format!("v{old}_to_v{new}.diff"));
        crate::atomic::write(&path, &text)
            .map_err(|e| ReferenceError::failed(format!("{}: cannot write: {e}", path.display())))?;
        report.diff = Some(DiffReport { path, files, only_old, only_new });
    } else {
        let pin = match &args.pin {
            Some(v) => Pin { version: v.clone(), source: "--pin".into() },
            None => find_pin(project.as_ref(), &opts.cwd, resolved.model_dir.as_deref(), &args.package, &opts.env)?,
        };
        let fetched = fetch(&cache, &pin.version, &resolved.name, &args.also, &mut warnings)?;
        report.versions.push(write_version(&fetched, &base.join(format!("v{}", pin.version)))?);
        report.pin = Some(pin);
    }
    warnings.extend(ignored_warning(&root, &base));
    report.warnings = warnings;
    Ok(report)
}

/// The project's pin, else the version of the package found on the search
/// path.
fn find_pin(
    project: Option<&Project>,
    cwd: &Path,
    model_dir: Option<&Path>,
    package: &str,
    env: &crate::settings::Env,
) -> Result<Pin, ReferenceError> {
    if let Some(p) = project
        && let Some(pin) = pin::project_pin(&p.pyproject, &p.settings.search_root, model_dir, package)
    {
        return Ok(pin);
    }
    let search = match project {
        Some(p) => crate::upstream::SearchPath::from_env(env, &p.root, cwd, &p.package_root()),
        None => crate::upstream::SearchPath::from_env(env, cwd, cwd, cwd),
    };
    if let Ok(init) = search.find_module(&format!("{package}.__init__"))
        && let Some(version) = crate::upstream::parse_version(&init.text)
    {
        return Ok(Pin { version, source: format!("{} (the package found)", init.origin.display()) });
    }
    Err(ReferenceError::usage(format!(
        "no pinned {package} version: no `{package}==X` in pyproject.toml, no `Based on: {package}==X` in a generated file, and no {package} package on the search path\n  help: pass --pin X"
    )))
}

/// The report as text.
pub fn render_text(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if report.resolved_from != "module name" {
        let _ = writeln!(out, "model {} ({})", report.model, report.resolved_from);
    }
    if let Some(pin) = &report.pin {
        let _ = writeln!(out, "pin {} (from {})", pin.version, pin.source);
    }
    for v in &report.versions {
        let _ = writeln!(out, "{} {} from {} (RECORD verified):", report.model, v.version, v.wheel.display());
        for f in &v.files {
            let _ = writeln!(out, "  {:<9} {} ({} bytes)", f.status, f.path.display(), f.bytes);
        }
    }
    if let Some(d) = &report.diff {
        let _ = writeln!(out, "diff {}", d.path.display());
        for f in &d.files {
            let _ = writeln!(out, "  {}: +{} -{} lines", f.name, f.lines_added, f.lines_removed);
            if let Some(s) = &f.symbols {
                for (what, c) in [("classes", &s.classes), ("functions", &s.functions), ("methods", &s.methods)] {
                    for (verb, names) in [("changed", &c.changed), ("added", &c.added), ("removed", &c.removed)] {
                        if !names.is_empty() {
                            let _ = writeln!(out, "    {what} {verb} ({}): {}", names.len(), names.join(", "));
                        }
                    }
                }
                if s.classes.is_empty() && s.functions.is_empty() && s.methods.is_empty() {
                    let _ = writeln!(out, "    no class or function changed");
                }
            }
        }
        for n in &d.only_old {
            let _ = writeln!(out, "  {n}: only in the old version");
        }
        for n in &d.only_new {
            let _ = writeln!(out, "  {n}: only in the new version");
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
