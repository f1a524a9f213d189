//! One config, end to end: evaluate → find upstream → generate → ruff →
//! diff. Pure of writes: the caller decides whether to write, compare or
//! fix. Configs are independent jobs.

pub mod cached;
pub mod diagnostics;
mod many;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::codegen;
use crate::normalize::{Ruff, RuffError};
use crate::project::Project;
use crate::settings::Env;
use crate::upstream::{SearchPath, UpstreamError};
use patchgen_cache::{Input, Inputs, Prober};
use patchgen_config::{self as config, EvalError, PatchPlan, ProjectLoader, Warning, loader::Recording};
use patchgen_diagnostics::Diagnostic;
use patchgen_python::pysource::ParsedFile;
use patchgen_python::pytext;

/// Everything one run shares between configs.
pub struct Context {
    pub project: Project,
    pub loader: ProjectLoader,
    pub search: SearchPath,
    pub ruff: Ruff,
    /// The working directory the run started in.
    pub cwd: PathBuf,
    /// The version for `Based on:`, and what deciding it read.
    transformers_version: std::sync::OnceLock<(String, Arc<Vec<Input>>)>,
    /// Looks at the cache inputs nothing else reads (ruff's settings and
    /// binary), once per run.
    recorder: Prober,
    /// The inputs every config shares (see `cached`).
    run_inputs: std::sync::OnceLock<Arc<Vec<Input>>>,
    /// Whether [`Job::inputs`] records what evaluation read and ruff's
    /// settings (what only the result cache reads): off unless a run with
    /// a cache turns it on (`cached::Context::generate_many_cached`); a job
    /// recorded without them is never stored.
    record_inputs: std::sync::atomic::AtomicBool,
    /// Upstream modules read and parsed so far, by module name (configs
    /// often share one: a model's GPU and NPU configs). A failure is not
    /// kept: the config that meets it reads the module again for its own
    /// error.
    upstream: std::sync::Mutex<std::collections::HashMap<String, Arc<std::sync::OnceLock<Option<Upstream>>>>>,
    /// Generation steps configs share (prepared overrides, rewritten classes).
    codegen: codegen::Cache,
}

/// An upstream module: where it was found, its text parsed, and what
/// finding and reading it depended on.
type Upstream = (PathBuf, Arc<ParsedFile>, Arc<Vec<Input>>);

/// One config's identity and where its files go: what `Raw` and
/// `Generated` share.
pub struct Job {
    pub module: String,
    pub plan: PatchPlan,
    pub config_path: PathBuf,
    pub output_dir: PathBuf,
    pub py_path: PathBuf,
    pub diff_path: PathBuf,
    pub upstream_origin: PathBuf,
    /// Warnings and notes about this config, each naming it (codes in
    /// `patchgen_diagnostics::codes`).
    pub diagnostics: Vec<Diagnostic>,
    /// Override targets missing upstream, injected into their class.
    pub injected: Vec<String>,
    /// Everything the output was computed from, as cache inputs (see
    /// `cached`): what evaluation looked up and read, the upstream module
    /// and what decided `Based on:`, ruff's binary and settings, the run's
    /// settings. Recorded before ruff runs; what evaluation read and
    /// ruff's settings only while the context records them
    /// (`inputs_recorded`).
    pub inputs: Inputs,
    /// Whether `inputs` is complete ([`Context::record_inputs`]): a job
    /// without them is never stored in a cache.
    pub inputs_recorded: bool,
}

/// A config's generated files, in memory.
pub struct Generated {
    pub job: Job,
    pub py: String,
    pub diff: String,
    pub upstream_lines: usize,
    /// The raw text `py` was normalised from, and codegen's trace of it
    /// (`crate::provenance`: what a drift's details are mapped through).
    pub raw: String,
    pub trace: crate::provenance::raw::RawTrace,
    /// `py` is the text the caller expected for this config
    /// ([`Context::generate_many_expecting`]; the drift gate: the
    /// checked-in `.py`, read as `check::read_text` reads it).
    pub py_is_expected: bool,
}

impl std::ops::Deref for Generated {
    type Target = Job;

    fn deref(&self) -> &Job {
        &self.job
    }
}

/// Why a config failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Eval(EvalError),
    #[error(
        "{}`{config_name}` in `{module}` is missing or not a PatchConfig\n  help: the module must assign `{config_name} = PatchConfig(...)` at module level (or pass `-c NAME`)",
        path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default()
    )]
    NotAConfig { module: String, config_name: String, path: Option<PathBuf> },
    /// `optional=True` and the upstream module is not installed: `--check`
    /// skips the config (as the reference does since it grew the field).
    #[error("upstream module `{source_module}` not found (the config is optional)")]
    OptionalSkipped { source_module: String },
    /// The upstream module cannot be read; located (the config's
    /// `source_module=`) when the module is not found.
    #[error("{0}")]
    Upstream(UpstreamError, Option<Box<patchgen_diagnostics::Location>>),
    #[error("{}:{line}: syntax error in the upstream module: {message}", origin.display())]
    UpstreamSyntax { origin: PathBuf, line: usize, message: String },
    #[error("{module}: code generation error: {error}")]
    Codegen { module: String, error: codegen::CodegenError },
    #[error("{}: {error}", py_path.display())]
    Ruff {
        py_path: PathBuf,
        error: RuffError,
        /// The config (or upstream) line behind the first finding, and the
        /// generated line (see `provenance::locate`).
        at: Option<Box<(patchgen_diagnostics::Location, patchgen_diagnostics::Location)>>,
    },
}

impl Failure {
    /// This failure as a coded diagnostic of config `config` (its message
    /// is the failure's text, as `Display` writes it).
    pub fn diagnostic(&self, config: &str) -> Diagnostic {
        use patchgen_diagnostics::{Location, codes};
        let code = match self {
            Failure::Eval(e) => e.code.unwrap_or(codes::CONFIG_ERROR),
            Failure::NotAConfig { .. } => codes::NOT_A_CONFIG,
            Failure::OptionalSkipped { .. } => codes::OPTIONAL_SKIPPED,
            Failure::Upstream(UpstreamError::NotFound { .. }, _) => codes::UPSTREAM_NOT_FOUND,
            Failure::Upstream(..) | Failure::UpstreamSyntax { .. } => codes::UPSTREAM_SYNTAX,
            Failure::Codegen { .. } => codes::CODEGEN_ERROR,
            Failure::Ruff { .. } => codes::RUFF_ERROR,
        };
        let d = match self {
            Failure::Eval(e) => {
                let d = code.diagnostic(e.message.clone()).at(e.loc.location());
                match &e.help {
                    Some(h) => d.help(h.clone()),
                    None => d,
                }
            }
            Failure::NotAConfig { path: Some(p), .. } => {
                code.diagnostic(self.to_string()).at(Location::file(p.clone()))
            }
            Failure::UpstreamSyntax { origin, line, .. } => {
                code.diagnostic(self.to_string()).at(Location::line(origin.clone(), *line))
            }
            Failure::Upstream(UpstreamError::NotUtf8 { origin, line }, _) => {
                code.diagnostic(self.to_string()).at(Location::line(origin.clone(), *line))
            }
            Failure::Upstream(UpstreamError::NotFound { module, searched }, Some(at)) => {
                let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                code.diagnostic(format!("upstream module `{module}` not found (searched: {})", searched.join(", ")))
                    .at((**at).clone())
                    .help(UpstreamError::NOT_FOUND_HELP)
            }
            Failure::Ruff { at: Some(at), .. } => {
                code.diagnostic(self.to_string()).at(at.0.clone()).related(at.1.clone(), "in the generated module")
            }
            Failure::Ruff { py_path, .. } => code.diagnostic(self.to_string()).at(Location::file(py_path.clone())),
            // Located: the excerpt shows the config line, `help` its own line.
            Failure::Codegen { module, error: codegen::CodegenError { message, help, location: Some(loc) } } => {
                let d = code.diagnostic(format!("{module}: code generation error: {message}")).at(loc.location());
                match help {
                    Some(h) => d.help(h.clone()),
                    None => d,
                }
            }
            _ => code.diagnostic(self.to_string()),
        };
        d.config(config)
    }
}

/// `a/<module/as/path>.py` vs `b/<target_file>`, `n=3`, every line
/// right-stripped, one final newline (the reference's `.diff`).
pub fn build_diff(upstream: &str, generated: &str, source_module: &str, target_file: &str) -> String {
    diff_against(&pytext::splitlines_keepends(upstream), generated, source_module, target_file)
}

/// [`build_diff`] given the upstream's lines (`str.splitlines(True)`).
fn diff_against(a: &[&str], generated: &str, source_module: &str, target_file: &str) -> String {
    let b = pytext::splitlines_keepends(generated);
    let raw = patchgen_python::diff::unified_diff(
        a,
        &b,
        &format!("a/{}.py", source_module.replace('.', "/")),
        &format!("b/{target_file}"),
        3,
    );
    strip_trailing_ws(&raw)
}

/// The reference's `strip_diff_trailing_ws`.
pub fn strip_trailing_ws(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    if !pytext::only_newline_breaks(text) {
        return strip_trailing_ws_by_lines(text);
    }
    // `\n` the only line break (what `diff_against` and the checked-in
    // `.diff`s hold): `str.splitlines()` is a split at `\n` without an
    // empty last piece, so each line is right-stripped and ended in place.
    let mut out = String::with_capacity(text.len() + 1);
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
        out.push_str(pytext::rstrip(&text[start..i]));
        out.push('\n');
        start = i + 1;
    }
    if start < text.len() {
        out.push_str(pytext::rstrip(&text[start..]));
        out.push('\n');
    }
    out
}

/// [`strip_trailing_ws`] line by line, as the reference does it.
fn strip_trailing_ws_by_lines(text: &str) -> String {
    let mut out = pytext::splitlines(text).iter().map(|l| pytext::rstrip(l)).collect::<Vec<_>>().join("\n");
    out.push('\n');
    out
}

/// Why the generated files of a config would land outside what patchgen
/// may write: a `target_file` that is absolute or climbs with `..`, or a
/// default output directory that resolves (through a symlink) outside the
/// project.
fn outside_output(target_file: &str, default_dir: bool, config_path: &Path, project_root: &Path) -> Option<String> {
    let plain = Path::new(target_file).components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || target_file.is_empty() {
        return Some(format!("target_file `{target_file}` is not a file name inside the output directory"));
    }
    if default_dir {
        let dir = default_output_dir(config_path);
        let resolved = crate::project::resolve(&dir);
        let root = crate::project::resolve(project_root);
        if !resolved.starts_with(&root) {
            return Some(format!(
                "the output directory {} resolves to {}, outside the project ({})",
                dir.display(),
                resolved.display(),
                root.display()
            ));
        }
    }
    None
}

/// `<config dir>/generated`, or next to a `patches/` parent.
pub fn default_output_dir(config_path: &Path) -> PathBuf {
    let resolved = crate::project::resolve(config_path);
    let parent = resolved.parent().unwrap_or(Path::new("/"));
    if parent.file_name().is_some_and(|n| n == "patches") {
        parent.parent().unwrap_or(parent).join("generated")
    } else {
        parent.join("generated")
    }
}

impl Context {
    /// A context whose ruff is `ruff_override`, else what the settings say
    /// in `env` (`crate::settings::ruff`; an invalid `PATCHGEN_RUFF_*` value
    /// is ignored here: commands resolve settings first and report it).
    pub fn new(project: Project, cwd: &Path, ruff_override: Option<PathBuf>, env: &Env) -> Context {
        let ruff = crate::settings::ruff_or_default(ruff_override.as_deref(), env, &project);
        Context::with_ruff(project, cwd, ruff)
    }

    /// A context running `ruff` (resolved by `crate::settings`); upstream
    /// modules are searched for in the environment it was resolved in.
    pub fn with_ruff(project: Project, cwd: &Path, ruff: Ruff) -> Context {
        let mut loader = ProjectLoader::new(vec![project.package_root(), cwd.to_path_buf()]);
        if let Some(bytes) = project.settings.max_file_size {
            loader.set_max_file_size(bytes);
        }
        let search = SearchPath::from_env(&ruff.env, &project.root, cwd, &project.package_root());
        Context {
            project,
            loader,
            search,
            ruff,
            cwd: cwd.to_path_buf(),
            transformers_version: std::sync::OnceLock::new(),
            recorder: Prober::new(Default::default()),
            run_inputs: std::sync::OnceLock::new(),
            record_inputs: std::sync::atomic::AtomicBool::new(false),
            upstream: Default::default(),
            codegen: Default::default(),
        }
    }

    /// Record each [`Job::inputs`] in full (`on`: what evaluation looked
    /// up and read, ruff's settings) or not: only a result cache needs
    /// them, and finding them costs ~8 % of generation.
    pub fn record_inputs(&self, on: bool) {
        self.record_inputs.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether jobs generated now record their inputs in full.
    pub fn records_inputs(&self) -> bool {
        self.record_inputs.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn transformers_version(&self) -> &str {
        &self.transformers_version_inputs().0
    }

    fn transformers_version_inputs(&self) -> &(String, Arc<Vec<Input>>) {
        self.transformers_version.get_or_init(|| {
            let (version, inputs) = self.search.transformers_version_inputs();
            (version, Arc::new(inputs))
        })
    }

    /// The config modules a command runs on: every config the project
    /// discovers when `requested` is empty, else `requested` normalised
    /// (each one must be a module under the package root; the error names
    /// it after `flag`, the option it came from, `""` for a positional).
    pub fn select_modules(&self, requested: &[String], flag: &str) -> Result<Vec<String>, crate::error::RunError> {
        use crate::error::RunError;
        if requested.is_empty() {
            let configs = self.project.discover()?;
            return Ok(configs.into_iter().map(|c| c.module).collect());
        }
        let modules: Vec<String> = requested.iter().map(|m| self.project.normalize_module(m)).collect();
        if let Some(m) = modules.iter().find(|m| self.loader.find(m).is_none()) {
            let flag = flag.trim().trim_start_matches('-');
            return Err(RunError::NoSuchModule {
                flag: (!flag.is_empty()).then(|| flag.to_string()),
                module: m.clone(),
                package_root: self.project.package_root(),
            });
        }
        Ok(modules)
    }

    /// Evaluate a config module into its plan.
    pub fn evaluate(&self, module: &str, config_name: &str) -> Result<(PatchPlan, PathBuf, Vec<Warning>), Failure> {
        self.evaluate_with(&self.loader, module, config_name)
    }

    fn evaluate_with(
        &self,
        loader: &dyn config::ModuleLoader,
        module: &str,
        config_name: &str,
    ) -> Result<(PatchPlan, PathBuf, Vec<Warning>), Failure> {
        match config::evaluate(loader, module, config_name).map_err(Failure::Eval)? {
            Some(ev) => Ok((ev.plan, ev.path, ev.warnings)),
            None => Err(Failure::NotAConfig {
                module: module.to_string(),
                config_name: config_name.to_string(),
                path: self.loader.find(module).map(|(p, _)| p),
            }),
        }
    }

    /// Generate one config completely in memory.
    pub fn generate(&self, module: &str, config_name: &str, output_dir: Option<&Path>) -> Result<Generated, Failure> {
        let raw = self.generate_raw(module, config_name, output_dir)?;
        let py = self.ruff.normalize(&raw.text, &raw.abs_target).map_err(|error| self.ruff_failure(&raw, error))?;
        Ok(raw.finish(py))
    }

    /// A ruff failure of `raw`, placed (when ruff rejected the text) at the
    /// line behind its first finding.
    pub fn ruff_failure(&self, raw: &Raw, error: RuffError) -> Failure {
        let at = match &error {
            RuffError::Rejected { .. } => crate::provenance::locate::ruff_rejection(&self.ruff, raw).map(Box::new),
            _ => None,
        };
        Failure::Ruff { py_path: raw.job.py_path.clone(), error, at }
    }

    /// The upstream module `module`, found and parsed once per run.
    fn upstream(&self, module: &str) -> Result<Upstream, Failure> {
        let cell = self.upstream.lock().expect("upstream cache").entry(module.to_string()).or_default().clone();
        let mut failure = None;
        let found = cell.get_or_init(|| match self.read_upstream(module) {
            Ok(found) => Some(found),
            Err(f) => {
                failure = Some(f);
                None
            }
        });
        match (found, failure) {
            (Some(found), _) => Ok(found.clone()),
            (None, Some(f)) => Err(f),
            (None, None) => self.read_upstream(module),
        }
    }

    /// Where `plan`'s config names its upstream module: the
    /// `source_module` argument of its `PatchConfig(...)` call, else the
    /// call itself.
    fn source_module_location(&self, plan: &PatchPlan) -> patchgen_diagnostics::Location {
        let call = plan.created_at.location();
        let Ok(file) = self.loader.parse_file(&plan.created_at.path) else { return call };
        patchgen_python::pysource::call_argument_at(&file, (call.line, call.column), "source_module", 0)
            .map_or(call, |range| file.location(range))
    }

    fn read_upstream(&self, module: &str) -> Result<Upstream, Failure> {
        let upstream = self.search.find_module(module).map_err(|e| Failure::Upstream(e, None))?;
        // Shared with the process's other runs: upstream modules outlive one.
        let parsed = ParsedFile::parse_shared(upstream.origin.clone(), &upstream.text).map_err(|e| {
            Failure::UpstreamSyntax { origin: upstream.origin.clone(), line: e.line, message: e.message }
        })?;
        Ok((upstream.origin, parsed, Arc::new(upstream.inputs)))
    }

    /// Evaluate, find upstream and generate, stopping before ruff: the
    /// caller normalises `text` as the file at `abs_target` (one by one or
    /// in a batch) and hands the result to [`Raw::finish`].
    pub fn generate_raw(&self, module: &str, config_name: &str, output_dir: Option<&Path>) -> Result<Raw, Failure> {
        let record = self.records_inputs();
        let (plan, config_path, warnings, mut own) = if record {
            let recording = Recording::new(&self.loader);
            let (plan, path, warnings) = self.evaluate_with(&recording, module, config_name)?;
            (plan, path, warnings, recording.into_inputs())
        } else {
            let (plan, path, warnings) = self.evaluate_with(&self.loader, module, config_name)?;
            (plan, path, warnings, Vec::new())
        };
        crate::normalize::inputs::dedup(&mut own);
        let (upstream_origin, parsed, upstream_inputs) = match self.upstream(&plan.source_module) {
            Err(Failure::Upstream(UpstreamError::NotFound { .. }, _)) if plan.optional => {
                return Err(Failure::OptionalSkipped { source_module: plan.source_module.clone() });
            }
            Err(Failure::Upstream(e @ UpstreamError::NotFound { .. }, _)) => {
                return Err(Failure::Upstream(e, Some(Box::new(self.source_module_location(&plan)))));
            }
            found => found?,
        };
        let diagnosis = diagnostics::diagnose(&plan, &parsed, module);
        let mut found: Vec<Diagnostic> = warnings.iter().map(|w| diagnostics::from_config_warning(w, module)).collect();
        found.extend(diagnosis.diagnostics);
        let (text, trace) = codegen::generate_traced(&plan, &parsed, self.transformers_version(), &self.codegen)
            .map_err(|error| Failure::Codegen { module: module.to_string(), error })?;
        if let Some(why) = outside_output(&plan.target_file, output_dir.is_none(), &config_path, &self.project.root) {
            return Err(Failure::Eval(
                EvalError::new(plan.created_at.clone(), why)
                    .with_help("patchgen writes generated files only inside the project (or the -o directory given)"),
            ));
        }
        let output_dir = match output_dir {
            Some(d) => d.to_path_buf(),
            None => default_output_dir(&config_path),
        };
        let py_path = output_dir.join(&plan.target_file);
        let diff_name = Path::new(&plan.target_file).with_extension("diff");
        let diff_path = output_dir.join(diff_name.file_name().unwrap_or(diff_name.as_os_str()));
        let abs_target = if py_path.is_absolute() {
            py_path.clone()
        } else {
            std::env::current_dir().unwrap_or_default().join(&py_path)
        };
        // Groups other configs share (stored once, looked at once per run,
        // see `cache::Inputs`): the upstream module, what decided `Based
        // on:`, the run's settings, and ruff's settings split into what
        // lies in the config's own directory and the rest (the same for
        // most configs of a project).
        let settings =
            if record { self.ruff.settings_inputs(&text, &abs_target, &self.cwd, &self.recorder) } else { Vec::new() };
        let config_dir = abs_target.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
        let (local, around): (Vec<Input>, Vec<Input>) =
            settings.into_iter().partition(|i| i.probe.path().is_some_and(|p| p.starts_with(config_dir)));
        let inputs = Inputs {
            own,
            shared: vec![
                upstream_inputs,
                self.transformers_version_inputs().1.clone(),
                self.run_inputs().clone(),
                Arc::new(local),
                Arc::new(around),
            ],
        };
        Ok(Raw {
            job: Job {
                module: module.to_string(),
                plan,
                config_path,
                output_dir,
                py_path,
                diff_path,
                upstream_origin,
                diagnostics: found,
                injected: diagnosis.injected,
                inputs,
                inputs_recorded: record,
            },
            abs_target,
            text,
            trace,
            upstream: parsed,
        })
    }
}

/// A config generated but not yet normalised (see [`Context::generate_raw`]).
pub struct Raw {
    pub job: Job,
    /// `py_path` made absolute: the path ruff is told the text lives at.
    pub abs_target: PathBuf,
    /// The generated text before ruff.
    pub text: String,
    /// Where each line of `text` came from (`crate::provenance`).
    pub trace: crate::provenance::raw::RawTrace,
    /// The upstream module (what the `.diff` is taken against).
    pub upstream: Arc<ParsedFile>,
}

impl std::ops::Deref for Raw {
    type Target = Job;

    fn deref(&self) -> &Job {
        &self.job
    }
}

/// A `.py` text some config is expected to normalise to, with its `.diff`
/// taken in advance (see [`Context::generate_many_expecting`]).
pub struct Guess {
    py: String,
    diff: String,
}

impl Raw {
    /// The finished config, given `py` = ruff's output for `text`.
    pub fn finish(self, py: String) -> Generated {
        self.finish_guessed(py, None)
    }

    /// The `.diff` this config would get if ruff's output were `py`.
    fn diff_for(&self, py: &str) -> String {
        diff_against(&self.upstream.splitlines_keepends(), py, &self.job.plan.source_module, &self.job.plan.target_file)
    }

    /// Take the `.diff` for an expected `.py` text now.
    pub fn guess(&self, py: String) -> Guess {
        let diff = self.diff_for(&py);
        Guess { py, diff }
    }

    /// [`Raw::finish`], reusing `guess`'s `.diff` when ruff's output is
    /// the guessed text.
    pub fn finish_guessed(self, py: String, guess: Option<Guess>) -> Generated {
        let (diff, py_is_expected) = match guess {
            Some(g) if g.py == py => (g.diff, true),
            _ => (self.diff_for(&py), false),
        };
        Generated {
            upstream_lines: self.upstream.splitlines().len(),
            job: self.job,
            py,
            diff,
            py_is_expected,
            raw: self.text,
            trace: self.trace,
        }
    }
}

#[cfg(test)]
mod strip_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path answers exactly what stripping line by line does.
        #[test]
        fn strip_trailing_ws_fast_path_is_exact(
            parts in prop::collection::vec(
                prop::sample::select(vec![
                    "x", "+ y", "-z", "@@ -1 +1 @@", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f",
                    "\u{85}", "\u{a0}", "\u{2028}", "\u{3000}", "é", "€", " \n", "x\t\n",
                ]),
                0..40,
            ),
        ) {
            let text = parts.concat();
            let slow = if text.is_empty() { String::new() } else { strip_trailing_ws_by_lines(&text) };
            prop_assert_eq!(strip_trailing_ws(&text), slow);
        }
    }

    #[test]
    fn strip_trailing_ws_examples() {
        assert_eq!(strip_trailing_ws("a \n\nb\t\n"), "a\n\nb\n");
        assert_eq!(strip_trailing_ws("a\n\nb\n"), "a\n\nb\n");
        assert_eq!(strip_trailing_ws("a\nb"), "a\nb\n");
        assert_eq!(strip_trailing_ws(" \n+x \u{a0}\n-\t\n"), "\n+x\n-\n");
    }
}
