//! What rules read: [`Shared`] (one per run: project, pipeline, upstream
//! version, settings), [`LintContext`] (one per config: plan, config file,
//! generated text parsed, upstream module, generated→config map) and
//! [`ProjectContext`] (every config, for cross-config rules). A config's
//! own rules see the whole context; the project rules may see it settled
//! ([`LintContext::settle`]: the generated module dropped, the facts they
//! read kept). See the module docs of `lint` for the API rule authors use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ruff_python_ast::Stmt;
use ruff_text_size::TextSize;

use super::genmap::{self, Origin};
use super::settings::LintSettings;
use patchgen_config::plan::{Loc, Patch, PatchPlan, PatchType};
use patchgen_core::pipeline::{self, Failure};
use patchgen_core::survey::modules::{ClassRef, Lineage, ModuleError, Version};
use patchgen_core::survey::signature::Signature;
use patchgen_diagnostics::{Diagnostic, Location};
use patchgen_python::pysource::ParsedFile;

/// Everything a lint run shares between configs.
pub struct Shared {
    pub pipeline: pipeline::Context,
    /// The upstream version linted against (modules parsed once).
    pub upstream: Version,
    pub settings: LintSettings,
    toy_configs: OnceLock<Vec<(PathBuf, serde_json::Value)>>,
    /// Top-level bindings of upstream modules, by module (see [`Shared::upstream_bindings`]).
    bindings: std::sync::Mutex<std::collections::HashMap<String, Arc<std::collections::HashSet<String>>>>,
    /// Files rules read directly (not through the loader or the search
    /// path), as cache inputs.
    pub reads: std::sync::Mutex<Vec<patchgen_cache::Input>>,
    /// Whether [`Shared::read_noted`] notes the digest of what it reads.
    notes_reads: bool,
    /// What rules compute once per run (the upstream and the project are
    /// fixed for a run): per-run, not process-wide, so two runs in one
    /// process never share a stale answer.
    pub memo: RunMemo,
}

/// Values rules compute once per lint run.
#[derive(Default)]
pub struct RunMemo {
    /// PG303: the argument names transformers documents for every model.
    pub model_args: OnceLock<Vec<String>>,
    /// PG401: the upstream's checkpoint conversion recipes.
    pub recipes: OnceLock<Result<patchgen_moe::recipes::Recipes, patchgen_moe::recipes::RecipeError>>,
    /// PG504: the project's pin, from its `pyproject.toml`.
    pub project_pin: OnceLock<Option<String>>,
}

impl Shared {
    pub fn new(pipeline: pipeline::Context, upstream: Version, settings: LintSettings) -> Shared {
        Shared {
            pipeline,
            upstream,
            settings,
            toy_configs: OnceLock::new(),
            bindings: Default::default(),
            reads: Default::default(),
            notes_reads: true,
            memo: RunMemo::default(),
        }
    }

    /// This context without the digests of the files rules read: for a
    /// run whose result no cache stores (`--no-cache`, the editor).
    pub fn without_read_digests(mut self) -> Shared {
        self.notes_reads = false;
        self
    }

    pub fn project_root(&self) -> &Path {
        &self.pipeline.project.root
    }

    /// An upstream module, parsed (`None` when it is not in this upstream).
    pub fn upstream_module(&self, module: &str) -> Option<Arc<ParsedFile>> {
        self.upstream.module(module).ok()
    }

    /// Whether `module` exists upstream as a module or a package.
    pub fn upstream_module_exists(&self, module: &str) -> bool {
        match self.upstream.module(module) {
            Ok(_) | Err(ModuleError::Broken(_)) => true,
            Err(ModuleError::NotFound) => {
                !matches!(self.upstream.module(&format!("{module}.__init__")), Err(ModuleError::NotFound))
            }
        }
    }

    /// The names an upstream module (or package `__init__`) binds at top
    /// level, `if`/`try` blocks included; computed once per module.
    pub fn upstream_bindings(&self, module: &str) -> Option<Arc<std::collections::HashSet<String>>> {
        if let Some(b) = self.bindings.lock().unwrap_or_else(|e| e.into_inner()).get(module) {
            return Some(b.clone());
        }
        let file = self.upstream_module(module).or_else(|| self.upstream_package_init(module))?;
        let names: std::collections::HashSet<String> =
            patchgen_core::survey::names::bound_in(file.body()).into_iter().map(|(n, _)| n).collect();
        let names = Arc::new(names);
        self.bindings.lock().unwrap_or_else(|e| e.into_inner()).insert(module.to_string(), names.clone());
        Some(names)
    }

    /// An upstream package's `__init__.py`, parsed.
    pub fn upstream_package_init(&self, package: &str) -> Option<Arc<ParsedFile>> {
        self.upstream.module(&format!("{package}.__init__")).ok()
    }

    /// A top-level class of an upstream module (following re-exports).
    pub fn upstream_class(&self, module: &str, name: &str) -> Option<ClassRef> {
        self.upstream.class(module, name)
    }

    /// A class and its bases as far as they can be followed.
    pub fn lineage(&self, class: &ClassRef) -> Lineage {
        self.upstream.lineage(class)
    }

    /// A project module (first-party code), parsed.
    pub fn project_module(&self, module: &str) -> Option<(Arc<ParsedFile>, bool)> {
        let (path, is_package) = self.pipeline.loader.find(module)?;
        self.pipeline.loader.parse_file(&path).ok().map(|f| (f, is_package))
    }

    fn note(&self, input: patchgen_cache::Input) {
        self.reads.lock().expect("lint reads").push(input);
    }

    /// A file's text, noted as a cache input (its bytes, or that it was
    /// not there); `None` when absent or not UTF-8.
    pub fn read_noted(&self, what: &str, path: &Path) -> Option<String> {
        match patchgen_cache::bounded::read(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE) {
            Ok(bytes) => {
                if self.notes_reads {
                    self.note(patchgen_cache::Input::content(what, path, &bytes));
                }
                String::from_utf8(bytes).ok()
            }
            Err(e) => {
                let input = if e.kind() == std::io::ErrorKind::NotFound {
                    patchgen_cache::Input::exists(what, path, false)
                } else {
                    let never = patchgen_cache::probe::digest_parts([b"unreadable".as_slice()]);
                    patchgen_cache::Input::new(what, patchgen_cache::Probe::Content { path: path.to_path_buf() }, never)
                };
                self.note(input);
                None
            }
        }
    }

    /// The project's toy model configs: every `config.json` under a
    /// `toy_config` or `toy_configs` directory below the project root
    /// (`tests/toy_config/<model>/config.json`), parsed; unreadable ones skipped.
    pub fn toy_configs(&self) -> &[(PathBuf, serde_json::Value)] {
        self.toy_configs.get_or_init(|| {
            let mut out = Vec::new();
            for dir in ["tests/toy_config", "tests/toy_configs", "toy_config", "toy_configs"] {
                let dir = self.project_root().join(dir);
                self.note(patchgen_cache::Input::new(
                    "toy config directory",
                    patchgen_cache::Probe::Identity { path: dir.clone() },
                    patchgen_cache::probe::identity(&dir),
                ));
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut entries: Vec<PathBuf> =
                    rd.filter_map(|e| e.ok()).map(|e| e.path().join("config.json")).collect();
                entries.sort();
                for path in entries {
                    let Some(text) = self.read_noted("toy config", &path) else {
                        continue;
                    };
                    if let Ok(value) = serde_json::from_str(&text) {
                        out.push((path, value));
                    }
                }
            }
            out
        })
    }
}

/// One config, as rules see it.
pub struct LintContext<'a> {
    pub shared: &'a Shared,
    /// The config module (`pkg.models.qwen3.qwen3_gpu_patch_gen_config`).
    pub module: String,
    pub plan: PatchPlan,
    /// The config file, parsed.
    pub config: Arc<ParsedFile>,
    /// The generated module as codegen produces it (before ruff), parsed;
    /// its `path` is where `check` would write it.
    pub generated: ParsedFile,
    /// The upstream module the plan patches, parsed.
    pub upstream: Arc<ParsedFile>,
    /// `override_method` targets missing from their class, injected.
    pub injected: Vec<String>,
    /// Generated regions → config definitions.
    pub origins: Vec<Origin>,
    /// Where each line of `generated` came from (codegen's trace).
    pub trace: patchgen_core::provenance::raw::RawTrace,
    /// Where the upstream module was read from.
    pub upstream_path: PathBuf,
    /// What generation itself reports about the config (`PGW…` warnings,
    /// `PGI…` notes): not lint findings, but the editor shows them.
    pub notes: Vec<Diagnostic>,
    /// The checked-in generated file mapped against `generated`.
    checked_in: OnceLock<Option<CheckedIn>>,
    configuration: OnceLock<Option<Arc<ParsedFile>>>,
    package_init: OnceLock<Option<Arc<ParsedFile>>>,
    overridden: OnceLock<BTreeMap<String, Overridden>>,
}

/// A function a config overrides (a replaced class's methods included), as
/// [`LintContext::overridden`] lists it.
#[derive(Clone, Debug)]
pub struct Overridden {
    /// Where its replacement is defined: the replacement's identity.
    pub replacement: Loc,
    /// The generated def's parameters.
    pub signature: Option<Signature>,
    /// The config line the generated def came from.
    pub def_at: Option<Loc>,
}

impl<'a> LintContext<'a> {
    /// Evaluate and generate `module` (no ruff) and parse the result.
    pub fn build(shared: &'a Shared, module: &str, config_name: &str) -> Result<LintContext<'a>, Failure> {
        let raw = shared.pipeline.generate_raw(module, config_name, None)?;
        let upstream = raw.upstream.clone();
        let trace = raw.trace;
        shared.upstream.seed(&raw.job.plan.source_module, upstream.clone());
        let py_path = raw.job.py_path.clone();
        let generated = ParsedFile::parse(py_path, &raw.text).map_err(|e| Failure::Codegen {
            module: module.to_string(),
            error: patchgen_core::codegen::CodegenError {
                message: format!("the generated text does not parse (line {}): {}", e.line, e.message),
                help: None,
                location: None,
            },
        })?;
        let job = raw.job;
        let config = shared.pipeline.loader.parse_file(&job.config_path).map_err(|e| {
            Failure::Eval(patchgen_config::EvalError::new(Loc::line(job.config_path.clone(), 0), format!("{e:?}")))
        })?;
        let origins = genmap::origins(&job.plan, &generated, &trace, &job.upstream_origin);
        Ok(LintContext {
            shared,
            module: module.to_string(),
            plan: job.plan,
            config,
            generated,
            upstream,
            injected: job.injected,
            origins,
            trace,
            upstream_path: job.upstream_origin,
            notes: job.diagnostics,
            checked_in: OnceLock::new(),
            configuration: OnceLock::new(),
            package_init: OnceLock::new(),
            overridden: OnceLock::new(),
        })
    }

    /// The functions the config overrides by qualified name (`f`, `C.m`):
    /// method overrides and function replacements, and each method of a
    /// replaced class; a later patch of the same target wins.
    pub fn overridden(&self) -> &BTreeMap<String, Overridden> {
        self.overridden.get_or_init(|| {
            let mut replacements: BTreeMap<String, Loc> = BTreeMap::new();
            for p in &self.plan.patches {
                let Some(object) = &p.replacement else {
                    continue;
                };
                match p.patch_type {
                    PatchType::MethodOverride | PatchType::FunctionReplacement => {
                        replacements.insert(p.target.clone(), object.defined_at.clone());
                    }
                    PatchType::ClassReplacement => {
                        let Some(class) = self.generated_class(&p.target) else {
                            continue;
                        };
                        for s in &class.body {
                            if let Stmt::FunctionDef(f) = s {
                                let at = Loc::line(object.defined_at.path.clone(), object.defined_at.line);
                                replacements.insert(format!("{}.{}", p.target, f.name.id), at);
                            }
                        }
                    }
                    _ => {}
                }
            }
            replacements
                .into_iter()
                .map(|(qual, replacement)| {
                    let def = self.generated_def(&qual);
                    let signature = def.map(|f| Signature::of(&f.parameters, &self.generated.text));
                    let def_at = def.and_then(|f| {
                        let line = self.generated.line_of(ruff_text_size::Ranged::start(&f.name));
                        self.config_location_of_line(line).map(|l| Loc::line(l.path, l.line))
                    });
                    (qual, Overridden { replacement, signature, def_at })
                })
                .collect()
        })
    }

    /// Keep what the project rules read (the module, the plan, the
    /// package, [`LintContext::overridden`]) and drop the rest of what the
    /// config's own rules read: the generated module's tree and text, its
    /// maps to the config and to the checked-in file. A run over many
    /// configs then holds one generated module per thread instead of all
    /// of them, and the memory one config frees is the next one's, not
    /// fresh memory the kernel must zero. Afterwards the generated module
    /// is empty (its path kept).
    pub fn settle(&mut self) {
        self.overridden();
        if let Ok(empty) = ParsedFile::parse(self.generated.path.clone(), "") {
            self.generated = empty;
        }
        self.checked_in = OnceLock::new();
        self.origins = Vec::new();
        self.trace = Default::default();
    }

    pub fn settings(&self) -> &LintSettings {
        &self.shared.settings
    }

    /// Where the generated file lives (`<config dir>/generated/<target_file>`).
    pub fn py_path(&self) -> &Path {
        &self.generated.path
    }

    /// The config file's path.
    pub fn config_path(&self) -> &Path {
        &self.plan.config_path
    }

    /// A config location (`Loc` of the plan) as a diagnostics location.
    pub fn at_config(&self, loc: &Loc) -> Location {
        Location::line(loc.path.clone(), loc.line)
    }

    /// Where a patch names its target: the string literal `"target"` in the
    /// DSL call registered at `patch.registered_at` (on that line or the few
    /// after it, for calls split over lines), else the call's line.
    pub fn at_target(&self, patch: &Patch) -> Location {
        let loc = &patch.registered_at;
        let Ok(file) = self.shared.pipeline.loader.parse_file(&loc.path) else { return self.at_config(loc) };
        let lines = file.splitlines();
        for quote in ['"', '\''] {
            let needle = format!("{quote}{}{quote}", patch.target);
            for (i, line) in lines.iter().enumerate().skip(loc.line.saturating_sub(1)).take(6) {
                if let Some(col) = line.find(&needle) {
                    let start = line[..col].chars().count() + 1;
                    let end = start + needle.chars().count();
                    return Location::range(loc.path.clone(), (i + 1, start), (i + 1, end));
                }
            }
        }
        self.at_config(loc)
    }

    /// The region of the generated module a generated line lies in.
    pub fn origin_of_line(&self, line: usize) -> Option<&Origin> {
        self.origins.iter().filter(|o| o.gen_start <= line && line <= o.gen_end).min_by_key(|o| o.gen_end - o.gen_start)
    }

    /// The origin of a generated def/class by qualified name (`C.m`, `f`).
    pub fn origin_named(&self, qualname: &str) -> Option<&Origin> {
        self.origins.iter().find(|o| o.qualname == qualname)
    }

    /// The config line generated line `line` came from, if config code
    /// produced it (a patch's replacement or banner, a helper, an
    /// `add_import` or post-import block): codegen's trace says.
    pub fn config_location_of_line(&self, line: usize) -> Option<Location> {
        use patchgen_core::provenance::raw::RawOrigin;
        let raw = *self.trace.lines.get(line.checked_sub(1)?)?;
        if !matches!(
            raw,
            RawOrigin::Patch { .. }
                | RawOrigin::Banner { .. }
                | RawOrigin::Helper { .. }
                | RawOrigin::Import { .. }
                | RawOrigin::Block { .. }
        ) {
            return None;
        }
        let map = patchgen_core::provenance::map::SourceMap::default();
        let origin = patchgen_core::provenance::map::Resolver::new(&self.plan, &self.upstream_path, &map).raw(raw);
        Some(Location::line(origin.path?, origin.line?))
    }

    /// A place in the generated text: the config line that produced it as the
    /// primary location (else `fallback`, else the generated line itself),
    /// the generated file's line as a related location. Attach to `d`.
    pub fn at_generated(&self, d: Diagnostic, offset: TextSize, fallback: Option<&Loc>) -> Diagnostic {
        let line = self.generated.line_of(offset);
        let primary = self.config_location_of_line(line).or_else(|| fallback.map(|l| self.at_config(l)));
        let generated = self.generated_location(line);
        match primary {
            Some(p) => d.at(p).related(generated, "in the generated module"),
            None => d.at(generated),
        }
    }

    /// The checked-in generated file's line for a line of the (pre-ruff)
    /// generated text: where the line matching of the two texts (codegen's
    /// output against ruff's, `provenance::map`) puts it when the file
    /// exists, else the pre-ruff line number.
    pub fn generated_location(&self, line: usize) -> Location {
        let path = self.py_path().to_path_buf();
        // A line the checked-in file does not have (a stale or partial
        // file: the match ran past its end) keeps its generated line.
        let on_disk = self.checked_in().and_then(|c| {
            let at = *c.to_disk.get(line.checked_sub(1)?)?;
            (at < c.line_count()).then_some(at)
        });
        match on_disk {
            Some(at) => Location::line(path, at + 1),
            None => Location::line(path, line),
        }
    }

    /// The generated file on disk (ruff-normalised) mapped against the
    /// generated text; `None` when absent or not UTF-8.
    pub fn checked_in(&self) -> Option<&CheckedIn> {
        self.checked_in
            .get_or_init(|| {
                let text = self.shared.read_noted("checked-in generated file", self.py_path())?;
                let text = patchgen_python::pytext::universal_newlines_owned(text);
                // Split once: the map, `generated_location` and PG105 all
                // want the file's lines.
                let lines = patchgen_python::pytext::splitlines(&text);
                let (map, to_disk) = patchgen_core::provenance::map::SourceMap::without_steps_lines(
                    &self.generated.text,
                    &self.trace,
                    &lines,
                );
                let base = text.as_ptr() as usize;
                let line_ranges = lines
                    .iter()
                    .map(|l| {
                        let start = l.as_ptr() as usize - base;
                        (start, start + l.len())
                    })
                    .collect();
                drop(lines);
                Some(CheckedIn { text, map, to_disk, line_ranges })
            })
            .as_ref()
    }

    /// The checked-in file's source map resolver.
    pub fn resolver<'m>(&'m self, checked_in: &'m CheckedIn) -> patchgen_core::provenance::map::Resolver<'m> {
        patchgen_core::provenance::map::Resolver::new(&self.plan, &self.upstream_path, &checked_in.map)
    }

    /// The upstream configuration module: `configuration_<m>` next to
    /// `modeling_<m>`.
    pub fn upstream_configuration(&self) -> Option<&ParsedFile> {
        self.configuration
            .get_or_init(|| {
                let (package, last) = self.plan.source_module.rsplit_once('.')?;
                let name = last.strip_prefix("modeling_")?;
                self.shared.upstream_module(&format!("{package}.configuration_{name}"))
            })
            .as_deref()
    }

    /// The model package's `__init__.py` (next to the config, or above a
    /// `patches/` directory).
    pub fn package_init(&self) -> Option<&ParsedFile> {
        self.package_init
            .get_or_init(|| {
                let dir = self.config_path().parent()?;
                let dir = if dir.file_name().is_some_and(|n| n == "patches") { dir.parent()? } else { dir };
                self.shared.pipeline.loader.parse_file(&dir.join("__init__.py")).ok()
            })
            .as_deref()
    }

    /// The last registration of a patch for `target` of this type.
    pub fn patch(&self, patch_type: patchgen_config::plan::PatchType, target: &str) -> Option<&Patch> {
        self.plan.patches.iter().rev().find(|p| p.patch_type == patch_type && p.target == target)
    }

    /// A top-level class of the upstream module (defined there, not imported).
    pub fn upstream_class_def(&self, name: &str) -> Option<&ruff_python_ast::StmtClassDef> {
        self.upstream.body().iter().rev().find_map(|s| match s {
            Stmt::ClassDef(c) if c.name.id.as_str() == name => Some(c),
            _ => None,
        })
    }

    /// The upstream class `name` of the patched module as a `ClassRef`
    /// (for its lineage).
    pub fn upstream_class(&self, name: &str) -> Option<ClassRef> {
        self.shared.upstream_class(&self.plan.source_module, name)
    }

    /// A generated function by qualified name: `f` (top level) or `C.m`.
    pub fn generated_def(&self, qualname: &str) -> Option<&ruff_python_ast::StmtFunctionDef> {
        let (body, name) = match qualname.split_once('.') {
            Some((class, method)) => (&self.generated_class(class)?.body[..], method),
            None => (self.generated.body(), qualname),
        };
        last_def(body, name)
    }

    /// A top-level class of the generated module.
    pub fn generated_class(&self, name: &str) -> Option<&ruff_python_ast::StmtClassDef> {
        self.generated.body().iter().rev().find_map(|s| match s {
            Stmt::ClassDef(c) if c.name.id.as_str() == name => Some(c),
            _ => None,
        })
    }

    /// The first line of the config file containing `needle` (for code the
    /// config writes as text: imports, post-import blocks).
    pub fn config_line_containing(&self, needle: &str) -> Option<Loc> {
        genmap::line_containing(&self.config.text, needle).map(|line| Loc::line(self.config_path().to_path_buf(), line))
    }

    /// Attach this config's module name and apply nothing else.
    /// A finding of this config: its module, and the patch target it is
    /// about when the rule did not say and its place says (a registration
    /// of this config, or a replacement's definition).
    pub fn own(&self, d: Diagnostic) -> Diagnostic {
        let target = d.target.clone().or_else(|| d.location.as_ref().and_then(|l| self.target_at(l)));
        Diagnostic { target, ..d }.config(self.module.clone())
    }

    /// The target of the (last) patch registered or defined at `at`.
    fn target_at(&self, at: &Location) -> Option<String> {
        let within = |path: &Path, first: usize, last: usize| {
            at.line > 0
                && first <= at.line
                && at.line <= last
                && patchgen_core::project::resolve(path) == patchgen_core::project::resolve(&at.path)
        };
        self.plan.patches.iter().rev().find_map(|p| {
            let r = &p.registered_at;
            let registered = r.line > 0 && within(&r.path, r.line, r.end.map_or(r.line, |(l, _)| l));
            let defined = p.replacement.as_ref().is_some_and(|o| {
                let d = &o.defined_at;
                d.line > 0 && within(&d.path, d.line, d.line + o.source.lines().count().saturating_sub(1))
            });
            (registered || defined).then(|| p.target.clone())
        })
    }
}

/// The checked-in generated file: its text, its source map (every change
/// from the generated text put down to ruff), and for each line of the
/// generated text (0-based) the line of the file it became.
pub struct CheckedIn {
    pub text: String,
    pub map: patchgen_core::provenance::map::SourceMap,
    pub to_disk: Vec<usize>,
    /// `str.splitlines()` of `text`, as byte ranges (split once).
    line_ranges: Vec<(usize, usize)>,
}

impl CheckedIn {
    /// The number of lines of the file (`str.splitlines()`).
    pub fn line_count(&self) -> usize {
        self.line_ranges.len()
    }

    /// The file's lines (`str.splitlines()`), without splitting it again.
    pub fn lines(&self) -> Vec<&str> {
        self.line_ranges.iter().map(|&(a, b)| &self.text[a..b]).collect()
    }
}

/// The last `def name` of a statement list.
pub fn last_def<'b>(body: &'b [Stmt], name: &str) -> Option<&'b ruff_python_ast::StmtFunctionDef> {
    body.iter().rev().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// Every config of a run, for cross-config rules.
pub struct ProjectContext<'a> {
    pub shared: &'a Shared,
    pub configs: &'a [LintContext<'a>],
}

impl<'a> ProjectContext<'a> {
    /// Every model package's `__init__.py` once, with the first config
    /// (in run order) that patches a module of that package.
    pub fn package_inits(&self) -> Vec<(&'a LintContext<'a>, &'a ParsedFile)> {
        let mut out: Vec<(&'a LintContext<'a>, &'a ParsedFile)> = Vec::new();
        for ctx in self.configs {
            if let Some(init) = ctx.package_init()
                && !out.iter().any(|(_, seen)| seen.path == init.path)
            {
                out.push((ctx, init));
            }
        }
        out
    }
}
