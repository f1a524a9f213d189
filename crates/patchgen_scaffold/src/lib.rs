//! `patchgen new <m>`: a new model's first patch-gen config, `__init__.py`
//! and toy config, from the project's closest sibling (protocol Phases 1,
//! 2, 4 and 6; step 1.7 "prefer reuse over copy-paste").
//!
//! `facts` reads the upstream modeling module (category, prefix, the
//! exception facts), `configuration` its configuration module's defaults,
//! `retarget` moves the template's patches onto the new model, `render`
//! writes the config, `init` the `__init__.py` (patterns A, B, C), `moe`
//! the MoE needs (from `moe inspect`'s and PG401's facts), the checkpoint
//! converter and `parallel_plan.py`, `hub` the MoE block kept behind a hub
//! kernel (replaced without the decorator), `toy` the toy config, `tables`
//! the test entries, `ruff_findings` and `lint_fixes` what is written for
//! ruff findings and lint errors in unpatched upstream code, `pg301_copy` a
//! template forward with an inherited PG301 copied and fixed instead of
//! reused; `dry_run` runs all of it in a private copy. This module finds the
//! template, plans the files (never
//! overwriting one), writes them, and runs generation on the result.

pub mod configuration;
pub mod dry_run;
pub mod facts;
pub mod hub;
pub mod init;
pub mod kernels;
pub mod lint_fixes;
pub mod moe;
pub mod pg301_copy;
pub mod render;
pub mod retarget;
pub mod ruff_findings;
pub mod tables;
pub mod test_rows;
pub mod toy;

use patchgen_config::plan::PatchType;
use std::path::{Path, PathBuf};

use serde::Serialize;

use configuration::ConfigurationModule;
use facts::{Category, ModelFacts};
use patchgen_core::pipeline::Context;
use patchgen_core::project::Project;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::source::Upstream;
use patchgen_core::upstream::SearchPath;
use retarget::{NormDonor, Retarget, Retargeted};

/// `--category`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CategoryArg {
    Auto,
    Text,
    Moe,
    Vlm,
    VlmMoe,
    Omni,
    OmniMoe,
}

/// What to scaffold: the command's arguments, parsed once.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HF module name of the model (transformers.models.<m>).
    pub model: String,
    /// The project model to start from (default: the protocol's reference model for the category).
    pub like: Option<String>,
    /// Backends to write configs for (`gpu`, `npu`).
    pub backend: Vec<String>,
    /// The model category (default: detected from the upstream module).
    pub category: CategoryArg,
    /// Run everything in a private copy and report the final plan; write nothing.
    pub dry_run: bool,
    /// The distribution the model comes from (`transformers`).
    pub package: String,
}

pub struct Options {
    pub args: Request,
    pub cwd: PathBuf,
}

/// A file of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedFile {
    pub path: PathBuf,
    pub what: String,
    #[serde(skip)]
    pub text: String,
}

/// One backend's config.
#[derive(Clone, Debug, Serialize)]
pub struct BackendPlan {
    pub backend: String,
    pub module: String,
    pub template_config: Option<String>,
    /// Lint errors the template's own config has too (kept reuses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inherited: Vec<String>,
    #[serde(flatten)]
    pub retargeted: Retargeted,
    #[serde(skip)]
    head: render::ConfigHead,
    #[serde(skip)]
    path: PathBuf,
}

/// Generation of one written config.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationResult {
    pub module: String,
    pub ok: bool,
    pub message: String,
}

/// What `new` did (or would do).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub model: String,
    pub prefix: String,
    pub upstream: String,
    pub category: &'static str,
    pub category_evidence: Vec<String>,
    pub template: Option<String>,
    pub template_reason: String,
    pub backends: Vec<BackendPlan>,
    pub files: Vec<PlannedFile>,
    pub moe_needs: Vec<String>,
    /// The MoE facts behind `moe_needs` (MoE categories only).
    pub moe: Option<moe::MoeNeeds>,
    pub generation: Vec<GenerationResult>,
    pub lint: String,
    pub tables: Vec<tables::Entry>,
    /// Phase 6: the rows written into the project's test tables; phase 7: their commands.
    pub test_rows: Option<test_rows::TestRows>,
    pub next_steps: Vec<String>,
    pub warnings: Vec<String>,
    pub dry_run: bool,
}

/// A failure: usage (exit 2) or a run that could not finish (exit 1).
pub type NewError = patchgen_core::error::RunError;

/// A project config: its module, file, backend and HF model.
#[derive(Clone, Debug)]
pub(crate) struct ProjectConfig {
    module: String,
    path: PathBuf,
    backend: String,
    hf_name: String,
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

/// The leading `#` comment block of a file (its licence header).
fn licence(text: &str) -> String {
    let lines: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" }
}

/// `from X import PatchConfig` as the template writes it.
fn patch_config_import(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("from ")?;
        let (module, names) = rest.split_once(" import ")?;
        names.contains("PatchConfig").then(|| format!("from {} import PatchConfig", module.trim()))
    })
}

/// The top-level `import`/`from … import` statements of a config (the
/// `PatchConfig` import aside), as written.
fn top_level_imports(text: &str) -> Vec<String> {
    use ruff_text_size::Ranged;
    let Ok(parsed) = ruff_python_parser::parse_module(text) else {
        return Vec::new();
    };
    parsed
        .syntax()
        .body
        .iter()
        .filter(|s| matches!(s, ruff_python_ast::Stmt::Import(_) | ruff_python_ast::Stmt::ImportFrom(_)))
        .map(|s| text[s.range()].to_string())
        .filter(|s| !s.contains("PatchConfig"))
        .collect()
}

/// The line importing `name` in a model package `__init__.py` of the project.
fn init_import_line(dirs: &[PathBuf], name: &str) -> Option<String> {
    dirs.iter().find_map(|d| {
        let text = std::fs::read_to_string(d.join("__init__.py")).ok()?;
        text.lines().find(|l| l.starts_with("from ") && l.ends_with(&format!("import {name}"))).map(str::to_string)
    })
}

/// The line importing `OpSlot` and the line declaring the `rms_norm` slot
/// in a plan's post-import blocks, stripped.
fn opslot_lines(blocks: &[String]) -> Option<(String, String)> {
    let line =
        |pat: &str| blocks.iter().flat_map(|b| b.lines()).map(str::trim).find(|l| l.contains(pat)).map(str::to_string);
    Some((line("import OpSlot")?, line("OpSlot(\"rms_norm\"")?))
}

/// The `OpSlot("rms_norm", "<variant>")` a plan's post-import blocks declare.
fn rms_norm_variant(blocks: &[String]) -> Option<String> {
    let marker = "OpSlot(\"rms_norm\", \"";
    blocks.iter().find_map(|b| {
        let rest = &b[b.find(marker)? + marker.len()..];
        Some(rest[..rest.find('"')?].to_string())
    })
}

fn version_of(ctx: &Context, project: &Project, cwd: &Path) -> Version {
    let search = SearchPath::from_env(&project.root, cwd, &project.package_root());
    let location = search.entries.first().map(|e| e.path().to_path_buf()).unwrap_or_default();
    Version::new(Upstream {
        arg: "search path".into(),
        version: ctx.transformers_version().to_string(),
        location,
        search,
    })
}

/// The architecture a toy config and the registry default to.
fn default_architecture(facts: &ModelFacts, classes: &[String]) -> String {
    let p = &facts.prefix;
    for suffix in ["ForConditionalGeneration", "ForCausalLM"] {
        let c = format!("{p}{suffix}");
        if classes.contains(&c) {
            return c;
        }
    }
    classes.iter().find(|c| c.contains("For")).cloned().unwrap_or_else(|| format!("{p}Model"))
}

/// Run `new`.
pub fn run(opts: &Options) -> Result<Report, NewError> {
    let args = &opts.args;
    if args.dry_run {
        return dry_run::run(opts);
    }
    let project = Project::find(&opts.cwd).map_err(|e| NewError::usage(e.to_string()))?;
    let ctx = Context::new(project.clone(), &opts.cwd, None);
    let version = version_of(&ctx, &project, &opts.cwd);
    let m = args.model.as_str();
    let facts = ModelFacts::read(&version, &args.package, m).map_err(|e| {
        let models = model_names(&version.upstream.search, &args.package);
        let near = patchgen_diagnostics::suggest::nearest(m, models.iter().map(String::as_str), 5);
        if !near.is_empty() {
            return NewError::failed(format!("{e}\n  help: nearest model names: {}", near.join(", ")));
        }
        NewError::failed(format!("{e}\n  help: put the {} package (or its wheel) on PYTHONPATH; `patchgen reference {m}` names the nearest models", args.package))
    })?;
    let configuration_source =
        version.upstream.search.find_module(&format!("{}.models.{m}.configuration_{m}", args.package)).ok();
    let configuration =
        configuration_source.as_ref().and_then(|s| ConfigurationModule::parse(s.origin.clone(), &s.text).ok());
    // The same module as the lint rules read it (PG306's `sub_configs`).
    let configuration_file = configuration_source
        .as_ref()
        .and_then(|s| patchgen_config::source::ParsedFile::parse(s.origin.clone(), &s.text).ok());
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
    let backends: Vec<String> = args.backend.iter().map(|b| b.trim().to_string()).filter(|b| !b.is_empty()).collect();
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
    // Template: --like, else the category's reference model the project has.
    let by_name = |name: &str| -> Option<String> {
        let dir = project.settings.search_root.join(name);
        configs.iter().find(|c| c.hf_name == name || c.path.parent() == Some(dir.as_path())).map(|c| c.hf_name.clone())
    };
    let (template, template_reason) = match &args.like {
        Some(like) => match by_name(like) {
            Some(t) => (Some(t), format!("--like {like}")),
            None => {
                let known: Vec<&str> = configs.iter().map(|c| c.hf_name.as_str()).collect();
                let near = patchgen_diagnostics::suggest::nearest(like, known.iter().copied(), 3);
                return Err(NewError::usage(format!(
                    "--like {like}: the project has no config for that model\n  help: nearest project models: {}",
                    near.join(", ")
                )));
            }
        },
        None => match category.templates().iter().find_map(|t| by_name(t)) {
            Some(t) => (Some(t.clone()), format!("the protocol's reference model for {}", category.as_str())),
            None => (
                None,
                format!(
                    "the project has none of {} (the protocol's reference models for {}): the built-in skeleton",
                    category.templates().join(", "),
                    category.as_str()
                ),
            ),
        },
    };
    let template_facts = match &template {
        Some(t) => Some(ModelFacts::read(&version, &args.package, t).map_err(|e| NewError::failed(e.to_string()))?),
        None => None,
    };
    let rel = |p: &Path| p.strip_prefix(&project.root).unwrap_or(p).display().to_string();
    let partial_rotary = configuration.as_ref().and_then(|c| c.partial_rotary());
    let donor = || -> Option<NormDonor> {
        for c in configs.iter().filter(|c| c.backend == "gpu" && Some(&c.hf_name) != template.as_ref()) {
            let Ok(f) = ModelFacts::read(&version, &args.package, &c.hf_name) else {
                continue;
            };
            let norms = [format!("{}RMSNorm", f.prefix), format!("{}TextRMSNorm", f.prefix)];
            let Some(norm) = norms.iter().find(|n| f.norm_is_one_plus_weight(&version, n).is_some()) else {
                continue;
            };
            let Ok((plan, _, _)) = ctx.evaluate(&c.module, "config") else {
                continue;
            };
            let target = format!("{norm}.forward");
            if let Some(p) = plan.patches.iter().find(|p| p.target == target && p.replacement.is_some()) {
                return Some(NormDonor {
                    config_module: c.module.clone(),
                    prefix: f.prefix.clone(),
                    patch: p.clone(),
                    opslot_variant: rms_norm_variant(&plan.post_import_blocks),
                    opslot_lines: opslot_lines(&plan.post_import_blocks),
                });
            }
        }
        None
    };
    // The OpSlot declarations of the project's configs (read, not evaluated),
    // and the rms_norm variant a config declares for its `1 + weight` norm.
    let config_texts: Vec<(String, &ProjectConfig)> =
        configs.iter().filter_map(|c| Some((std::fs::read_to_string(&c.path).ok()?, c))).collect();
    let slots = kernels::ProjectSlots::scan(config_texts.iter().map(|(t, _)| t.as_str()));
    let one_plus_variant = || -> Option<String> {
        config_texts.iter().find_map(|(text, c)| {
            let s = kernels::ProjectSlots::scan([text.as_str()]);
            let variant = s.decls.iter().find(|d| d.op == "rms_norm" && d.variant != "standard")?.variant.clone();
            let f = ModelFacts::read(&version, &args.package, &c.hf_name).ok()?;
            [format!("{}RMSNorm", f.prefix), format!("{}TextRMSNorm", f.prefix)]
                .iter()
                .any(|n| f.norm_is_one_plus_weight(&version, n).is_some())
                .then_some(variant)
        })
    };
    let mut warnings = Vec::new();
    let mut files: Vec<PlannedFile> = Vec::new();
    let mut plans = Vec::new();
    let any_config_text = configs.first().and_then(|c| std::fs::read_to_string(&c.path).ok()).unwrap_or_default();
    for backend in &backends {
        let module = format!("{}.{m}.{m}_{backend}_patch_gen_config", project.settings.package_prefix);
        let path = model_dir.join(format!("{m}_{backend}_patch_gen_config.py"));
        let template_config =
            template.as_ref().and_then(|t| configs.iter().find(|c| &c.hf_name == t && &c.backend == backend));
        if template.is_some() && template_config.is_none() {
            warnings.push(format!("the template has no {backend} config: {backend} not written"));
            continue;
        }
        let (retargeted, template_text) = match (template_config, &template_facts) {
            (Some(tc), Some(tf)) => {
                let (plan, _, _) = ctx.evaluate(&tc.module, "config").map_err(|e| NewError::failed(e.to_string()))?;
                let r = Retarget {
                    template: &plan,
                    template_facts: tf,
                    new: &facts,
                    version: &version,
                    partial_rotary: partial_rotary.clone(),
                    norm_donor: &donor,
                    slots: &slots,
                    one_plus_variant: &one_plus_variant,
                }
                .run();
                (r, std::fs::read_to_string(&tc.path).unwrap_or_default())
            }
            _ => (Retargeted::default(), any_config_text.clone()),
        };
        let from = template_config.map(|c| c.module.clone());
        let out_dir = model_dir.join("generated");
        let regen = format!("patchgen {module} -o {} --diff", rel(&out_dir));
        let title = match &from {
            Some(t) => format!(
                "Patch configuration for {} ({}), scaffolded by `patchgen new` from {t}.",
                facts.prefix,
                backend.to_uppercase()
            ),
            None => format!(
                "Patch configuration for {} ({}), scaffolded by `patchgen new` (no project template for {}: add the protocol's common patches).",
                facts.prefix,
                backend.to_uppercase(),
                category.as_str()
            ),
        };
        let description = match &template {
            Some(t) => format!("{} reusing the {t} patches", facts.prefix),
            None => format!("{} (scaffold)", facts.prefix),
        };
        let source_module = facts.module.clone();
        let target_file = format!("patched_modeling_{m}_{backend}.py");
        let import = patch_config_import(&template_text).unwrap_or_else(|| "from patchgen import PatchConfig".into());
        let template_imports = if template_config.is_some() { top_level_imports(&template_text) } else { Vec::new() };
        let head = render::ConfigHead {
            template_imports,
            licence: licence(&template_text),
            title,
            regen,
            patch_config_import: import,
            source_module,
            target_file,
            description,
        };
        let text = render::config(&head, &retargeted);
        files.push(PlannedFile { path: path.clone(), what: format!("{backend} patch-gen config"), text });
        warnings.extend(retargeted.warnings.iter().cloned());
        plans.push(BackendPlan {
            backend: backend.clone(),
            module,
            template_config: from,
            inherited: Vec::new(),
            retargeted,
            head,
            path,
        });
    }
    if plans.is_empty() {
        return Err(NewError::failed(format!("no config to write: {}", warnings.join("; "))));
    }
    // __init__.py
    let excluded: Vec<String> = plans.iter().flat_map(|p| p.retargeted.exclude.iter().cloned()).collect();
    let classes: Vec<String> = facts
        .all
        .iter()
        .filter(|c| facts.has_class(c) && !c.ends_with("PreTrainedModel") && !excluded.contains(c))
        .filter(|c| c.ends_with("Model") || c.contains("For"))
        .cloned()
        .collect();
    let default_arch = default_architecture(&facts, &classes);
    let main_config = configuration.as_ref().and_then(|c| c.main(&facts.prefix, m));
    let toy = match (configuration.as_ref(), main_config) {
        (Some(cm), Some(mc)) => Some(toy::toy_config(cm, mc, &default_arch, category.is_moe())),
        _ => None,
    };
    let template_dir = template
        .as_ref()
        .and_then(|t| configs.iter().find(|c| &c.hf_name == t))
        .and_then(|c| c.path.parent().map(Path::to_path_buf));
    let registry_key = main_config.and_then(|c| c.model_type.clone()).unwrap_or_else(|| m.to_string());
    let recipes =
        if category.is_moe() { Some(patchgen_moe::recipes::Recipes::load(&version.upstream.search)) } else { None };
    let moe_analysis = |carried: Vec<String>, plan: Option<(&Path, &str)>| -> Option<moe::MoeNeeds> {
        let recipes = recipes.as_ref()?;
        Some(moe::analyse(&moe::MoeInput {
            module_body: facts.file.body(),
            module_text: &facts.file.text,
            experts_classes: facts.classes.iter().filter(|c| c.ends_with("Experts")).cloned().collect(),
            root_class: &default_arch,
            model_type: &registry_key,
            recipes: recipes.as_ref().map_err(|e| e.to_string()),
            upstream_version: &version.upstream.version,
            carried_targets: carried,
            template_plan: plan,
        }))
    };
    let template_plan = template_dir
        .as_ref()
        .map(|d| d.join("parallel_plan.py"))
        .and_then(|p| std::fs::read_to_string(&p).ok().map(|t| (PathBuf::from(rel(&p)), t)));
    let carried_targets = |plans: &[BackendPlan]| -> Vec<String> {
        plans.iter().flat_map(|p| p.retargeted.carried.iter().map(|c| c.target.clone())).collect()
    };
    let moe_first =
        moe_analysis(carried_targets(&plans), template_plan.as_ref().map(|(p, t)| (p.as_path(), t.as_str())));
    let mut converter_written = false;
    if let Some(needs) = &moe_first {
        let lic = files.first().map(|f| licence(&f.text)).unwrap_or_default();
        if needs.converter.is_some() {
            let import = converter_import_line(&project.settings.search_root, template_dir.as_deref());
            let dims = toy.as_ref().map(|t| {
                let v: serde_json::Value = serde_json::from_str(&toy::config_json(t)).unwrap_or_default();
                patchgen_moe::config::MoeDims::from_value(Path::new("config.json"), &v)
            });
            match (import, dims) {
                (Some(import), Some(dims)) => {
                    let spec = moe::ConverterSpec {
                        licence: &lic,
                        converted_import: &import,
                        hf_name: m,
                        prefix: &facts.prefix,
                        upstream_version: &version.upstream.version,
                        dims: &dims,
                    };
                    match moe::converter_py(needs, &spec) {
                        Ok(text) => {
                            files.push(PlannedFile {
                                path: model_dir.join("checkpoint_tensor_converter.py"),
                                what: "checkpoint converter".into(),
                                text,
                            });
                            converter_written = true;
                        }
                        Err(e) => warnings.push(format!("checkpoint converter not written: {e}")),
                    }
                }
                (None, _) => warnings.push("checkpoint converter not written: no project checkpoint_tensor_converter.py shows how to import `ConvertedCheckpointTensor`; __init__.py follows pattern A (lint PG401 will say so)".into()),
                (_, None) => warnings.push(format!("checkpoint converter not written: no toy config (configuration_{m}.py) gives the experts count")),
            }
        }
        if let Some((_, t)) = &template_plan
            && !needs.ep_model_keys.is_empty()
            && let Some(text) = moe::parallel_plan_py(t, &needs.ep_model_keys)
        {
            files.push(PlannedFile {
                path: model_dir.join("parallel_plan.py"),
                what: "expert-parallel plan".into(),
                text,
            });
        }
        for plan in plans.iter_mut() {
            plan.retargeted.exception_comments.extend(needs.lines.iter().skip(1).map(|l| format!("MoE {l}")));
        }
    }
    let mut sibling_dirs: Vec<PathBuf> = template
        .iter()
        .filter_map(|t| configs.iter().find(|c| &c.hf_name == t).and_then(|c| c.path.parent().map(Path::to_path_buf)))
        .collect();
    sibling_dirs.extend(configs.iter().filter_map(|c| c.path.parent().map(Path::to_path_buf)));
    let registry = init_import_line(&sibling_dirs, "MODELING_REGISTRY");
    let written_backends: Vec<String> = plans.iter().map(|p| p.backend.clone()).collect();
    let npu = if written_backends.len() > 1 { init_import_line(&sibling_dirs, "IS_NPU_AVAILABLE") } else { None };
    let mut next_steps = Vec::new();
    match &registry {
        Some(reg) if !classes.is_empty() => {
            let mut keys: Vec<(String, Vec<String>, String)> = Vec::new();
            if let Some(mc) = main_config.and_then(|c| c.model_type.clone()) {
                keys.push((mc, classes.clone(), default_arch.clone()));
            } else {
                keys.push((m.to_string(), classes.clone(), default_arch.clone()));
            }
            // A VLM's text model has its own model_type when the module exports it.
            let causal = format!("{}ForCausalLM", facts.prefix);
            if category.is_multimodal()
                && classes.contains(&causal)
                && let Some(t) = configuration
                    .as_ref()
                    .and_then(|c| c.class(&format!("{}TextConfig", facts.prefix)))
                    .and_then(|c| c.model_type.clone())
            {
                let text_classes: Vec<String> =
                    classes.iter().filter(|c| c.contains("Text") || **c == causal).cloned().collect();
                keys.push((t, text_classes, causal));
            }
            let regs: Vec<init::Registration<'_>> = keys
                .iter()
                .map(|(k, c, d)| init::Registration { key: k, classes: c, default: d, prefix: &facts.prefix })
                .collect();
            let lic = files.first().map(|f| licence(&f.text)).unwrap_or_default();
            let (create, fqn) = moe::converter_functions(m);
            // A converter handling the base-model prefix: the base model class
            // maps index keys without it.
            let unprefixed: Vec<String> = match moe_first.as_ref().and_then(|n| n.base_model.as_ref()) {
                Some(b) if moe_first.as_ref().is_some_and(|n| !n.regex_renamings.is_empty()) => {
                    classes.iter().filter(|c| !moe::holds(facts.file.body(), c, &b.prefix)).cloned().collect()
                }
                _ => Vec::new(),
            };
            let hook = init::ConverterHook {
                module: "checkpoint_tensor_converter",
                create: &create,
                fqn: &fqn,
                unprefixed: &unprefixed,
            };
            let text = init::init_py(
                &lic,
                reg,
                npu.as_deref(),
                m,
                &written_backends,
                &regs,
                converter_written.then_some(&hook),
            );
            files.push(PlannedFile {
                path: model_dir.join("__init__.py"),
                what: if converter_written {
                    "model package (registry, pattern B)"
                } else {
                    "model package (registry)"
                }
                .into(),
                text,
            });
            if written_backends.len() > 1 && npu.is_none() {
                warnings.push(
                    "no project __init__.py imports IS_NPU_AVAILABLE: __init__.py imports the GPU module only".into(),
                );
            }
        }
        _ => {
            files.push(PlannedFile {
                path: model_dir.join("__init__.py"),
                what: "model package".into(),
                text: String::new(),
            });
            warnings.push(match registry {
                None => "no project model __init__.py imports MODELING_REGISTRY: __init__.py left empty (register the model by hand)".into(),
                Some(_) => format!("{} has no `__all__` listing model classes: __init__.py left empty (register the model by hand)", facts.module),
            });
        }
    }
    // Toy config.
    let toy_dir = project.root.join("tests/toy_config").join(format!("{m}_toy"));
    match (toy.as_ref(), main_config) {
        (Some(toy), Some(mc)) => {
            let origin = format!("transformers/models/{m}/configuration_{m}.py");
            files.push(PlannedFile {
                path: toy_dir.join("config.json"),
                what: "toy config".into(),
                text: toy::config_json(toy),
            });
            files.push(PlannedFile {
                path: toy_dir.join("README.md"),
                what: "toy config README".into(),
                text: toy::readme(m, &mc.name, &origin, &version.upstream.version, toy),
            });
        }
        _ => warnings.push(format!("no configuration_{m}.py config class found: no toy config written")),
    }
    let moe_needs = moe_first.as_ref().map(|n| n.lines.clone()).unwrap_or_default();
    // Never overwrite.
    if model_dir.exists() {
        for f in files.iter().filter(|f| f.path.starts_with(&model_dir)) {
            if f.path.exists() {
                return Err(NewError::usage(format!(
                    "{}: already exists; `patchgen new` never overwrites a file",
                    f.path.display()
                )));
            }
        }
    }
    // The toy config lives outside the model directory: an existing one is
    // kept (and said), the model's own files still written.
    files.retain(|f| {
        let keep = !f.path.exists();
        if !keep {
            warnings.push(format!("{}: already exists, not overwritten", f.path.display()));
        }
        keep
    });
    for p in &plans {
        let gen_dir = model_dir.join("generated");
        for ext in ["py", "diff"] {
            let g = gen_dir.join(format!("patched_modeling_{m}_{}.{ext}", p.backend));
            if g.exists() {
                return Err(NewError::usage(format!(
                    "{}: already exists; `patchgen new` never overwrites a file",
                    g.display()
                )));
            }
        }
    }
    let causal = default_arch.clone();
    // Phase 6: decided (and checked) before anything is written; a test
    // table that does not parse stops `new` here.
    let test_rows = test_rows::project::plan(&test_rows::project::Input {
        project: &project,
        version: &version,
        package: &args.package,
        configs: &configs,
        template: template.as_deref(),
        category,
        facts: &facts,
        registry_key: &registry_key,
        configuration: configuration.as_ref(),
        converter: converter_written
            .then(|| files.iter().find(|f| f.path.ends_with("checkpoint_tensor_converter.py")))
            .flatten()
            .zip(moe_first.as_ref())
            .and_then(|(f, n)| {
                Some(test_rows::converter_group::Written {
                    text: &f.text,
                    kind: n.converter.clone()?,
                    renamings: n.renamings.clone(),
                })
            }),
        ruff: &ctx.ruff,
    })
    .map_err(|e| NewError::failed(e.to_string()))?;
    let mut tables = tables::entries(m, category, &causal);
    tables.retain(|e| !test_rows::handles(e.file));
    next_steps.push(format!(
        "add `{m}` to `from . import (...)` and `__all__` in {}",
        rel(&project.settings.search_root.join("__init__.py"))
    ));
    let mut report = Report {
        model: m.to_string(),
        prefix: facts.prefix.clone(),
        upstream: facts.file.path.display().to_string(),
        category: category.as_str(),
        category_evidence: evidence,
        template,
        template_reason,
        backends: plans,
        files,
        moe_needs,
        moe: moe_first.clone(),
        generation: Vec::new(),
        lint: String::new(),
        tables,
        test_rows: Some(test_rows),
        next_steps,
        warnings,
        dry_run: args.dry_run,
    };
    // Normalise the Python files as the project's ruff would, then write.
    // All at once (config and `__init__.py`: one batch, or in parallel).
    let py: Vec<usize> = (0..report.files.len())
        .filter(|&i| report.files[i].path.extension().is_some_and(|e| e == "py") && !report.files[i].text.is_empty())
        .collect();
    let items: Vec<(&str, &Path)> =
        py.iter().map(|&i| (report.files[i].text.as_str(), report.files[i].path.as_path())).collect();
    let normalised = ctx.ruff.normalize_many(&items, 2);
    for (i, r) in py.into_iter().zip(normalised) {
        match r {
            Ok(t) => report.files[i].text = t,
            Err(e) => report.warnings.push(format!("{}: ruff: {e}", report.files[i].path.display())),
        }
    }
    for f in &report.files {
        patchgen_core::atomic::write(&f.path, &f.text)
            .map_err(|e| NewError::failed(format!("{}: cannot write: {e}", f.path.display())))?;
    }
    if let Some(rows) = &report.test_rows {
        test_rows::write_all(rows).map_err(|e| NewError::failed(format!("test tables: cannot write: {e}")))?;
    }
    let mut last_lint = None;
    for i in 0..report.backends.len() {
        let (result, lint) = generate_pruning(
            &project,
            &opts.cwd,
            &mut report.backends[i],
            template_facts.as_ref(),
            &facts,
            configuration_file.as_ref(),
        );
        report.backends[i].retargeted.settle_decisions(&facts.prefix);
        report.generation.push(result);
        last_lint = lint;
        // What the pruning rounds said (helpers dropped, overrides written).
        for w in &report.backends[i].retargeted.warnings {
            if !report.warnings.contains(w) {
                report.warnings.push(w.clone());
            }
        }
    }
    // The TODOs of what was finally written (pruning rounds add, reword
    // and drop them).
    for p in &report.backends {
        for c in &p.retargeted.carried {
            for t in &c.todos {
                report.next_steps.push(format!("{}: {t}", p.module));
            }
        }
    }
    // One backend: the pruning loop's last lint is the lint of what was written.
    let single = report.backends.len() == 1 && report.generation.iter().all(|g| g.ok);
    report.lint = match last_lint.filter(|_| single) {
        Some(r) => lint_summary(&r),
        None => lint_written(&report, &opts.cwd),
    };
    for b in &report.backends {
        for ext in ["py", "diff"] {
            let g = model_dir.join("generated").join(format!("patched_modeling_{m}_{}.{ext}", b.backend));
            if g.is_file() {
                report.files.push(PlannedFile {
                    path: g,
                    what: format!("generated ({} config)", b.backend),
                    text: String::new(),
                });
            }
        }
    }
    // The experts replacement after pruning.
    if let Some(n) =
        moe_analysis(carried_targets(&report.backends), template_plan.as_ref().map(|(p, t)| (p.as_path(), t.as_str())))
    {
        report.moe_needs = n.lines.clone();
        report.moe = Some(n);
    }
    Ok(report)
}

/// The project's way of importing `ConvertedCheckpointTensor` in a model
/// package's `checkpoint_tensor_converter.py` (the template's first).
fn converter_import_line(search_root: &Path, template_dir: Option<&Path>) -> Option<String> {
    let find = |dir: &Path| -> Option<String> {
        let text = std::fs::read_to_string(dir.join("checkpoint_tensor_converter.py")).ok()?;
        text.lines()
            .find(|l| l.starts_with("from ") && l.trim_end().ends_with("import ConvertedCheckpointTensor"))
            .map(|l| l.trim_end().to_string())
    };
    if let Some(l) = template_dir.and_then(find) {
        return Some(l);
    }
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(search_root).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter().find_map(|d| find(d))
}

/// `patchgen lint` over the configs just written: a one-line summary, the
/// findings listed after it.
fn lint_written(report: &Report, cwd: &Path) -> String {
    let modules: Vec<String> =
        report.backends.iter().zip(&report.generation).filter(|(_, g)| g.ok).map(|(b, _)| b.module.clone()).collect();
    if modules.is_empty() {
        return "not run (nothing generated)".into();
    }
    match lint_modules(modules, cwd) {
        Ok(r) => lint_summary(&r),
        Err(e) => format!("not run: {e}"),
    }
}

/// A lint report as one summary line, the findings listed after it.
fn lint_summary(r: &patchgen_lint::LintReport) -> String {
    use patchgen_diagnostics::Severity;
    let errors = r.diagnostics.iter().filter(|d| d.severity == Severity::Error).count() + r.errors.len();
    let mut out =
        format!("{} finding(s), {errors} error(s) ({} rules)", r.diagnostics.len() + r.errors.len(), r.rules.len());
    for d in r.errors.iter().chain(r.diagnostics.iter()) {
        let at = d.location.as_ref().map(|l| format!("{}:{}: ", l.path.display(), l.line)).unwrap_or_default();
        out.push_str(&format!("\n  {at}{} {}", d.code, d.message));
    }
    out
}

/// The lint report of `modules` with the project's default rules.
fn lint_modules(modules: Vec<String>, cwd: &Path) -> Result<patchgen_lint::LintReport, String> {
    let opts =
        patchgen_lint::Options { modules, no_download: true, no_cache: true, ..patchgen_lint::Options::default() };
    patchgen_lint::lint(&opts, cwd).map_err(|e| e.to_string())
}

/// Carried patches a lint error names (`\`<target>\`` or `\`<target>(`) or
/// points into: their reuse breaks the upstream contract, so they are
/// dropped, whatever the rule. Except an error the template's own config
/// has too (same rule, same place: the reused replacement's file and line):
/// inherited, the reuse stays (the project's pattern), the finding is
/// reported and marked with a `TODO(patchgen new): inherited …` at the reuse
/// — unless it is a PG301 the rule can fix: then the replacement is copied
/// into the config with the fix (`pg301_copy`; `models`: the template's and
/// the new HF model names).
fn lint_rejected(
    plan: &mut BackendPlan,
    report: &patchgen_lint::LintReport,
    template_report: Option<&patchgen_lint::LintReport>,
    root: &Path,
    models: (&str, &str),
) -> bool {
    use patchgen_diagnostics::Severity;
    let mut changed = false;
    let same_place = |a: &patchgen_diagnostics::Diagnostic, b: &patchgen_diagnostics::Diagnostic| {
        a.code == b.code
            && match (&a.location, &b.location) {
                (Some(x), Some(y)) => {
                    x.line == y.line
                        && patchgen_core::project::resolve(&x.path) == patchgen_core::project::resolve(&y.path)
                }
                _ => false,
            }
    };
    // An error is about a carried patch's target (lint's typed target), or
    // points into the reused replacement's definition.
    let hits = |d: &patchgen_diagnostics::Diagnostic, c: &retarget::Carried| {
        d.target.as_deref() == Some(c.target.as_str())
            || match (&c.defined_at, &d.location) {
                (Some((path, start, end)), Some(l)) => {
                    patchgen_core::project::resolve(path) == patchgen_core::project::resolve(&l.path)
                        && (*start..=*end).contains(&l.line)
                }
                _ => false,
            }
    };
    let errors: Vec<&patchgen_diagnostics::Diagnostic> =
        report.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
    for &d in &errors {
        // The template's own finding: same rule, same place (a finding
        // located in the template's config, in the reused replacement). One
        // located in the written config (a PG102 at the new call) is ours.
        let theirs = template_report
            .and_then(|t| t.diagnostics.iter().find(|td| td.severity == Severity::Error && same_place(d, td)));
        if let Some(td) = theirs {
            let at = td
                .location
                .as_ref()
                .map(|l| format!("{}:{}", l.path.strip_prefix(root).unwrap_or(&l.path).display(), l.line))
                .unwrap_or_else(|| plan.template_config.clone().unwrap_or_default());
            if d.code == "PG301" {
                // Not when another error hits the same replacement: in a
                // copy it would be the scaffold's own, and drop it.
                let alone = |c: &retarget::Carried| !errors.iter().any(|o| o.code != "PG301" && hits(o, c));
                let mut copied = false;
                for c in plan.retargeted.carried.iter_mut().filter(|c| c.copy.is_none() && hits(d, c) && alone(c)) {
                    let from = match &c.defined_at {
                        Some((path, line, _)) => {
                            format!("{}:{line}", path.strip_prefix(root).unwrap_or(path).display())
                        }
                        None => at.clone(),
                    };
                    if let Some(copy) = pg301_copy::copy_fixed(c, &from, models) {
                        let (reused, renamed) =
                            (format!("the reused `{}`", c.import_name), format!("the copied `{}`", copy.name));
                        for t in &mut c.todos {
                            *t = t.replace(&reused, &renamed);
                        }
                        c.copy = Some(copy);
                        // The copy lives in the new config now.
                        c.defined_at = None;
                        copied = true;
                    }
                }
                if copied {
                    changed = true;
                    continue;
                }
            }
            let line = format!("inherited from {at}: {} {} (the template has it too; fix it there)", d.code, d.message);
            if !plan.inherited.contains(&line) {
                plan.inherited.push(line);
            }
            let todo =
                format!("TODO(patchgen new): inherited {} from {at} (the template has it too; fix it there)", d.code);
            for c in plan.retargeted.carried.iter_mut().filter(|c| hits(d, c)) {
                if !c.todos.contains(&todo) {
                    c.todos.push(todo.clone());
                    changed = true;
                }
            }
            continue;
        }
        let (hit, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut plan.retargeted.carried).into_iter().partition(|c| hits(d, c));
        plan.retargeted.carried = kept;
        for c in hit {
            plan.retargeted.dropped.push(retarget::Dropped {
                template_target: c.template_target.clone(),
                target: c.target.clone(),
                reason: format!("lint {} on the reuse: {}", d.code, d.message),
                exception: false,
            });
            changed = true;
        }
    }
    changed
}

/// How many times a config is pruned and regenerated at most.
const MAX_ROUNDS: usize = 8;

/// Generate from the written config; when ruff rejects the generated file
/// or lint finds a reuse that breaks the upstream contract, change the
/// plan (import or prune for undefined names, override rejected upstream
/// code, drop the reuse), rewrite the config and try again. The generated
/// `.py` and `.diff` are written on success, with the last lint report.
fn generate_pruning(
    project: &Project,
    cwd: &Path,
    plan: &mut BackendPlan,
    template: Option<&ModelFacts>,
    new: &ModelFacts,
    configuration: Option<&patchgen_config::source::ParsedFile>,
) -> (GenerationResult, Option<patchgen_lint::LintReport>) {
    let fail =
        |module: &str, message: String| (GenerationResult { module: module.to_string(), ok: false, message }, None);
    // The template's own lint report, once, when the new config has errors.
    let mut template_lint: Option<Option<patchgen_lint::LintReport>> = None;
    for round in 0..MAX_ROUNDS {
        let ctx = Context::new(project.clone(), cwd, None);
        // Round 0: `run` wrote this very text, normalised, already.
        if round > 0 {
            plan.retargeted.fall_back();
            plan.retargeted.prune_helpers();
            let raw = render::config(&plan.head, &plan.retargeted);
            let text = ctx.ruff.normalize(&raw, &plan.path).unwrap_or(raw);
            if let Err(e) = patchgen_core::atomic::write(&plan.path, &text) {
                return fail(&plan.module, format!("{}: cannot write: {e}", plan.path.display()));
            }
        }
        let raw = match ctx.generate_raw(&plan.module, "config", None) {
            Ok(raw) => raw,
            Err(e) => return fail(&plan.module, e.to_string()),
        };
        match ctx.ruff.normalize(&raw.text, &raw.abs_target) {
            Ok(py) => {
                let g = raw.finish(py);
                let written = patchgen_core::atomic::write(&g.py_path, &g.py)
                    .and_then(|_| patchgen_core::atomic::write(&g.diff_path, &g.diff));
                if let Err(e) = written {
                    return fail(&plan.module, format!("{}: cannot write: {e}", g.py_path.display()));
                }
                let lint = lint_modules(vec![plan.module.clone()], cwd).ok();
                // Errors in upstream code a rule names the fix for: the
                // scaffold writes that fix (`lint_fixes`); the rest may drop
                // reuses.
                let fixes = lint
                    .as_ref()
                    .map(|r| lint_fixes::fixes(&r.diagnostics, configuration, new, &plan.retargeted))
                    .unwrap_or_default();
                let fixed = !fixes.overrides.is_empty();
                for o in fixes.overrides {
                    plan.retargeted.warnings.push(o.todo.clone());
                    plan.retargeted.upstream_overrides.push(o);
                }
                let rest = lint.as_ref().map(|r| patchgen_lint::LintReport {
                    upstream: r.upstream.clone(),
                    configs: r.configs,
                    rules: r.rules.clone(),
                    diagnostics: r
                        .diagnostics
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !fixes.handled.contains(i))
                        .map(|(_, d)| d.clone())
                        .collect(),
                    errors: r.errors.clone(),
                    suppressed: r.suppressed,
                    cache_note: None,
                });
                let has_errors = rest
                    .as_ref()
                    .is_some_and(|r| r.diagnostics.iter().any(|d| d.severity == patchgen_diagnostics::Severity::Error));
                if has_errors && template_lint.is_none() {
                    template_lint = Some(plan.template_config.clone().and_then(|t| lint_modules(vec![t], cwd).ok()));
                }
                let template_report = template_lint.as_ref().and_then(|t| t.as_ref());
                let rejected = template.is_some()
                    && rest.as_ref().is_some_and(|r| {
                        lint_rejected(
                            plan,
                            r,
                            template_report,
                            &project.root,
                            (template.map_or("", |t| t.hf_name.as_str()), new.hf_name.as_str()),
                        )
                    });
                if fixed || rejected {
                    continue;
                }
                let message = format!("generated {}", g.py_path.display());
                return (GenerationResult { module: plan.module.clone(), ok: true, message }, lint);
            }
            Err(patchgen_core::normalize::RuffError::Rejected { step: "check", diagnostics, .. }) => {
                if !fix_rejection(&ctx, &raw, plan, template, new) {
                    return fail(
                        &plan.module,
                        format!("{}: ruff rejected the generated file:\n{diagnostics}", raw.job.py_path.display()),
                    );
                }
            }
            Err(error) => {
                return fail(
                    &plan.module,
                    patchgen_core::pipeline::Failure::Ruff { py_path: raw.job.py_path.clone(), error, at: None }
                        .to_string(),
                );
            }
        }
    }
    fail(&plan.module, format!("still failing after {MAX_ROUNDS} rounds of pruning"))
}

/// Change the plan for what ruff's fix left in the generated file: names
/// nothing defines (F821) are imported or their users pruned; a finding in
/// a reused replacement drops the reuse; one in unpatched upstream code
/// overrides the enclosing definition verbatim with `# noqa`
/// (`ruff_findings`). `false` when nothing could be changed.
fn fix_rejection(
    ctx: &Context,
    raw: &patchgen_core::pipeline::Raw,
    plan: &mut BackendPlan,
    template: Option<&ModelFacts>,
    new: &ModelFacts,
) -> bool {
    use ruff_findings::Site;
    let Ok((fixed, json)) = ctx.ruff.check_findings(&raw.text, &raw.abs_target) else {
        return false;
    };
    let findings = ruff_findings::parse(&json);
    let rt = &mut plan.retargeted;
    let mut changed = false;
    let names: Vec<String> = findings
        .iter()
        .filter(|f| f.code == "F821")
        .filter_map(|f| f.message.split('`').nth(1).map(str::to_string))
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    if let Some(t) = template
        && !names.is_empty()
    {
        changed |= rt.resolve_missing(&names, t, &new.module);
    }
    let Ok(parsed) = ruff_python_parser::parse_module(&fixed) else {
        return changed;
    };
    let body = &parsed.syntax().body;
    let mut sites: Vec<(Site, Vec<&ruff_findings::Finding>)> = Vec::new();
    for f in findings.iter().filter(|f| f.code != "F821") {
        let site = ruff_findings::site_of(&fixed, body, f.row);
        match sites.iter_mut().find(|(s, _)| *s == site) {
            Some((_, v)) => v.push(f),
            None => sites.push((site, vec![f])),
        }
    }
    for (site, found) in sites {
        let Some(target) = site.target() else { continue };
        let class = match &site {
            Site::Method { class, .. } => Some(class.as_str()),
            _ => None,
        };
        let what: Vec<String> = found.iter().map(|f| format!("{} {}", f.code, f.message)).collect();
        // In a reused replacement: the reuse goes.
        let (hit, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut rt.carried).into_iter().partition(|c| {
            c.target == target || (c.patch_type == PatchType::ClassReplacement && Some(c.target.as_str()) == class)
        });
        rt.carried = kept;
        if !hit.is_empty() {
            for c in hit {
                rt.dropped.push(retarget::Dropped {
                    template_target: c.template_target.clone(),
                    target: c.target.clone(),
                    reason: format!("ruff rejects the reused replacement in the generated file: {}", what.join("; ")),
                    exception: false,
                });
            }
            changed = true;
            continue;
        }
        let upstream = match &site {
            Site::Method { class, method, .. } => new.defines_method(class, method),
            Site::Function { name, .. } => new.has_function(name),
            Site::Other => false,
        };
        if !upstream || rt.upstream_overrides.iter().any(|o| o.target == target) {
            continue;
        }
        if let Some(o) = ruff_findings::override_upstream(&fixed, &site, &found, new) {
            rt.warnings.push(o.todo.clone());
            rt.upstream_overrides.push(o);
            changed = true;
        }
    }
    changed
}

/// The report as text.
pub fn render_text(r: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{} ({}) — {}", r.model, r.prefix, r.upstream);
    let _ = writeln!(out, "category: {}", r.category);
    for e in &r.category_evidence {
        let _ = writeln!(out, "  evidence: {e}");
    }
    let _ = writeln!(out, "template: {} ({})", r.template.as_deref().unwrap_or("built-in skeleton"), r.template_reason);
    for b in &r.backends {
        let rt = &b.retargeted;
        let _ = writeln!(
            out,
            "\n{} config {} — {} patches carried, {} dropped",
            b.backend,
            b.module,
            rt.carried.len(),
            rt.dropped.len()
        );
        for c in &rt.carried {
            match &c.copy {
                Some(copy) => {
                    let _ =
                        writeln!(out, "  copy    {} ← {} (PG301 fixed)\n          {}", c.target, copy.from, copy.note);
                }
                None => {
                    let _ = writeln!(out, "  reuse   {} ← {}.{}", c.target, c.import_module, c.import_name);
                }
            }
            for n in &c.notes {
                let _ = writeln!(out, "          note: {n}");
            }
            for t in &c.todos {
                let _ = writeln!(out, "          {t}");
            }
        }
        for d in &rt.dropped {
            let _ = writeln!(out, "  dropped {}: {}", d.template_target, d.reason);
        }
        for i in &b.inherited {
            let _ = writeln!(out, "  {i}");
        }
        for o in &rt.upstream_overrides {
            let what = if o.codes.is_empty() {
                "own code".to_string()
            } else {
                format!("upstream verbatim, `# noqa: {}`", o.codes.join(", "))
            };
            let _ = writeln!(out, "  own     {} ({what})\n          {}", o.target, o.todo);
        }
        let _ = writeln!(
            out,
            "  decisions: rotary {}; MLP {}; norm {}",
            rt.decisions.rotary, rt.decisions.mlp, rt.decisions.norm
        );
    }
    for n in &r.moe_needs {
        let _ = writeln!(out, "MoE: {n}");
    }
    let verb = if r.dry_run { "would write" } else { "wrote" };
    let _ = writeln!(out, "\n{verb}:");
    for f in &r.files {
        let _ = writeln!(out, "  {} ({})", f.path.display(), f.what);
    }
    for g in &r.generation {
        let mark = if g.ok { "✓" } else { "✗" };
        let _ = writeln!(out, "{mark} {}: {}", g.module, g.message);
    }
    if !r.lint.is_empty() {
        let _ = writeln!(out, "lint: {}", r.lint);
    }
    if let Some(rows) = &r.test_rows {
        out.push_str(&test_rows::render::text(rows, r.dry_run));
    }
    if !r.tables.is_empty() {
        let _ = writeln!(out, "\nOther test entries to add by hand:");
    }
    for t in &r.tables {
        let _ = writeln!(out, "  {} — {}:\n{}", t.file, t.table, t.text);
    }
    if !r.next_steps.is_empty() {
        let _ = writeln!(out, "\nNext:");
        for s in &r.next_steps {
            let _ = writeln!(out, "  - {s}");
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(rows) = &r.test_rows {
        out.push_str(&test_rows::render::commands(rows));
    }
    out
}
