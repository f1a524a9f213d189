//! Phase 1 of `new`: read what every later phase decides from — the
//! project and its configs, the upstream model (its facts and its
//! configuration module), the category and the backends — and refuse a
//! request that cannot be served (a model upstream does not have, a backend
//! other than `gpu`/`npu`, a model the project already has a config for)
//! before anything is planned.
//!
//! Reads files, never writes one.

use std::path::{Path, PathBuf};

use patchgen_core::pipeline::Context;
use patchgen_core::project::Project;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::source::Upstream;
use patchgen_core::upstream::SearchPath;
use patchgen_python::pysource::ParsedFile;

use crate::configuration::ConfigurationModule;
use crate::facts::{Category, FactsError, ModelFacts};
use crate::{CategoryArg, NewError, Options};

/// A project config: its module, file, backend and HF model.
#[derive(Clone, Debug)]
pub(crate) struct ProjectConfig {
    pub(crate) module: String,
    pub(crate) path: PathBuf,
    pub(crate) backend: String,
    pub(crate) hf_name: String,
}

/// What the request and the project say, read once.
pub(crate) struct Scan {
    pub(crate) project: Project,
    pub(crate) ctx: Context,
    pub(crate) version: Version,
    /// The HF module name of the new model.
    pub(crate) model: String,
    /// The distribution the model comes from.
    pub(crate) package: String,
    pub(crate) facts: ModelFacts,
    /// Its `configuration_<m>.py`, parsed for the toy config and the registry key.
    pub(crate) configuration: Option<ConfigurationModule>,
    /// The same module as the lint rules read it (PG306's `sub_configs`).
    pub(crate) configuration_file: Option<ParsedFile>,
    pub(crate) category: Category,
    pub(crate) evidence: Vec<String>,
    /// The backends asked for, trimmed, each `gpu` or `npu`.
    pub(crate) backends: Vec<String>,
    pub(crate) configs: Vec<ProjectConfig>,
    /// `<search root>/<m>`: where the model's files go.
    pub(crate) model_dir: PathBuf,
}

impl Scan {
    pub(crate) fn read(opts: &Options) -> Result<Scan, NewError> {
        let args = &opts.args;
        let project = Project::find(&opts.cwd).map_err(|e| NewError::usage(e.to_string()))?;
        let ctx = Context::new(project.clone(), &opts.cwd, None, &opts.env);
        let version = version_of(&ctx, &project, &opts.cwd);
        let m = args.model.as_str();
        let facts = ModelFacts::read(&version, &args.package, m).map_err(|e| {
            let models = model_names(&version.upstream.search, &args.package);
            let near = patchgen_diagnostics::suggest::nearest(m, models.iter().map(String::as_str), 5);
            if !near.is_empty() {
                return NewError::failed(format!("{e}\n  help: nearest model names: {}", near.join(", ")));
            }
            NewError::failed(format!(
                "{e}\n  help: put the {} package (or its wheel) on PYTHONPATH; `patchgen reference {m}` names the nearest models",
                args.package
            ))
        })?;
        let configuration_source =
            version.upstream.search.find_module(&format!("{}.models.{m}.configuration_{m}", args.package)).ok();
        let configuration =
            configuration_source.as_ref().and_then(|s| ConfigurationModule::parse(s.origin.clone(), &s.text).ok());
        let configuration_file =
            configuration_source.as_ref().and_then(|s| ParsedFile::parse(s.origin.clone(), &s.text).ok());
        let (detected, mut evidence) = facts.category();
        let category = match args.category {
            CategoryArg::Auto => detected,
            CategoryArg::Text => Category::Text,
            CategoryArg::Moe => Category::Moe,
            CategoryArg::Vlm => Category::Vlm,
            CategoryArg::VlmMoe => Category::VlmMoe,
            CategoryArg::Omni => Category::Omni,
            CategoryArg::OmniMoe => Category::OmniMoe,
        };
        if args.category != CategoryArg::Auto {
            evidence.insert(0, format!("--category {} (detected: {})", category.as_str(), detected.as_str()));
        }
        let backends: Vec<String> =
            args.backend.iter().map(|b| b.trim().to_string()).filter(|b| !b.is_empty()).collect();
        if let Some(b) = backends.iter().find(|b| !matches!(b.as_str(), "gpu" | "npu")) {
            return Err(NewError::usage(format!("--backend {b}: expected gpu, npu or gpu,npu")));
        }
        let configs = project_configs(&project, &args.package);
        if let Some(c) = configs.iter().find(|c| c.hf_name == m) {
            return Err(NewError::usage(format!(
                "{}: the project already has a config for `{m}` ({})\n  help: edit it, or `patchgen generate {}`",
                c.path.display(),
                c.module,
                c.module
            )));
        }
        let model_dir = project.settings.search_root.join(m);
        Ok(Scan {
            project,
            ctx,
            version,
            model: m.to_string(),
            package: args.package.clone(),
            facts,
            configuration,
            configuration_file,
            category,
            evidence,
            backends,
            configs,
            model_dir,
        })
    }

    /// `p` relative to the project root, for messages and generated text.
    pub(crate) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.project.root).unwrap_or(p).display().to_string()
    }

    /// The first project config for the HF model `name`.
    pub(crate) fn config_of(&self, name: &str) -> Option<&ProjectConfig> {
        self.configs.iter().find(|c| c.hf_name == name)
    }

    /// The facts of another model of the same distribution.
    pub(crate) fn facts_of(&self, name: &str) -> Result<ModelFacts, FactsError> {
        ModelFacts::read(&self.version, &self.package, name)
    }
}

/// The project's configs with the HF model each targets (read from the
/// `source_module="..."` literal, without evaluating anything).
fn project_configs(project: &Project, package: &str) -> Vec<ProjectConfig> {
    let mut out = Vec::new();
    for c in project.discover().unwrap_or_default() {
        let Ok(text) = std::fs::read_to_string(&c.path) else {
            continue;
        };
        let Some(at) = text.find("source_module=") else {
            continue;
        };
        let rest = text[at + "source_module=".len()..].trim_start();
        let Some(quote) = rest.chars().next().filter(|q| *q == '"' || *q == '\'') else {
            continue;
        };
        let Some(end) = rest[1..].find(quote) else {
            continue;
        };
        let Some(hf_name) = patchgen_core::reference::model::hf_name_of(&rest[1..1 + end], package) else {
            continue;
        };
        let file = c.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let backend =
            file.strip_suffix("_patch_gen_config.py").and_then(|s| s.rsplit('_').next()).unwrap_or("gpu").to_string();
        out.push(ProjectConfig { module: c.module, path: c.path, backend, hf_name });
    }
    out
}

/// The model directories of the first `<package>/models` on the search path.
fn model_names(search: &SearchPath, package: &str) -> Vec<String> {
    let dir = format!("{package}/models");
    for entry in &search.entries {
        match entry {
            patchgen_core::upstream::Entry::Dir(d) => {
                let Ok(rd) = std::fs::read_dir(d.join(&dir)) else { continue };
                let mut names: Vec<String> = rd
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "__pycache__")
                    .collect();
                names.sort();
                return names;
            }
            patchgen_core::upstream::Entry::Archive { path, .. } => {
                let Ok(wheel) = patchgen_core::upstream::wheel::Wheel::open(path) else { continue };
                let names = wheel.subdirs(&dir);
                if !names.is_empty() {
                    return names.into_iter().collect();
                }
            }
        }
    }
    Vec::new()
}

fn version_of(ctx: &Context, project: &Project, cwd: &Path) -> Version {
    let search = SearchPath::from_env(&ctx.ruff.env, &project.root, cwd, &project.package_root());
    let location = search.entries.first().map(|e| e.path().to_path_buf()).unwrap_or_default();
    Version::new(Upstream {
        arg: "search path".into(),
        version: ctx.transformers_version().to_string(),
        location,
        search,
    })
}
