//! Phase 4 of `new`: the files beside the configs — for a MoE model the
//! checkpoint converter and the expert-parallel plan (`moe`, from the
//! upstream conversion recipes and the template's `parallel_plan.py`), the
//! model package's `__init__.py` (`init`: the registry keys, the NPU switch,
//! the converter hook), the toy config and its README (`toy`), and the rows
//! of the project's test tables (`test_rows`, decided — and checked — before
//! anything is written).
//!
//! Plans text only; `write` writes it.

use std::path::{Path, PathBuf};

use crate::configs::{Configs, licence};
use crate::configuration::ConfigClass as MainConfig;
use crate::facts::ModelFacts;
use crate::report::{BackendPlan, PlannedFile};
use crate::scan::Scan;
use crate::template::Template;
use crate::{NewError, init, moe, test_rows, toy};

/// What the MoE analysis reads besides the new config's carried patches
/// (run once before pruning, once after).
pub(crate) struct MoeAnalysis {
    recipes: Option<Result<patchgen_moe::recipes::Recipes, patchgen_moe::recipes::RecipeError>>,
    /// The architecture the registry and toy config default to.
    root_class: String,
    /// The registry key (the configuration's `model_type`).
    model_type: String,
    /// The template's `parallel_plan.py`: its project-relative path and text.
    template_plan: Option<(PathBuf, String)>,
}

impl MoeAnalysis {
    /// The MoE needs of `scan`'s model with these carried patch targets
    /// (`None` for a dense category).
    pub(crate) fn analyse(&self, scan: &Scan, carried: Vec<String>) -> Option<moe::MoeNeeds> {
        let recipes = self.recipes.as_ref()?;
        let facts = &scan.facts;
        Some(moe::analyse(&moe::MoeInput {
            module_body: facts.file.body(),
            module_text: &facts.file.text,
            experts_classes: facts.classes.iter().filter(|c| c.ends_with("Experts")).cloned().collect(),
            root_class: &self.root_class,
            model_type: &self.model_type,
            recipes: recipes.as_ref(),
            upstream_version: &scan.version.upstream.version,
            carried_targets: carried,
            template_plan: self.template_plan.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        }))
    }
}

/// The carried patch targets of every planned config.
pub(crate) fn carried_targets(plans: &[BackendPlan]) -> Vec<String> {
    plans.iter().flat_map(|p| p.retargeted.carried.iter().map(|c| c.target.clone())).collect()
}

/// The companions' outcome: what later phases and the report need.
pub(crate) struct Companions {
    pub(crate) moe: MoeAnalysis,
    /// The MoE needs before pruning (MoE categories).
    pub(crate) moe_first: Option<moe::MoeNeeds>,
    pub(crate) converter_written: bool,
    /// The registry's default architecture (the test tables' causal class).
    pub(crate) default_arch: String,
    pub(crate) registry_key: String,
}

/// Plan the companion files into `configs` (files and warnings; the MoE
/// needs become exception comments of every config).
pub(crate) fn plan(scan: &Scan, template: &Template, configs: &mut Configs) -> Companions {
    let m = scan.model.as_str();
    let facts = &scan.facts;
    let classes = registered_classes(facts, &configs.plans);
    let default_arch = default_architecture(facts, &classes);
    let main_config = scan.configuration.as_ref().and_then(|c| c.main(&facts.prefix, m));
    let toy = match (scan.configuration.as_ref(), main_config) {
        (Some(cm), Some(mc)) => Some(toy::toy_config(cm, mc, &default_arch, scan.category.is_moe())),
        _ => None,
    };
    let registry_key = main_config.and_then(|c| c.model_type.clone()).unwrap_or_else(|| m.to_string());
    let moe_analysis = MoeAnalysis {
        recipes: scan.category.is_moe().then(|| patchgen_moe::recipes::Recipes::load(&scan.version.upstream.search)),
        root_class: default_arch.clone(),
        model_type: registry_key.clone(),
        template_plan: template
            .dir
            .as_ref()
            .map(|d| d.join("parallel_plan.py"))
            .and_then(|p| std::fs::read_to_string(&p).ok().map(|t| (PathBuf::from(scan.rel(&p)), t))),
    };
    let moe_first = moe_analysis.analyse(scan, carried_targets(&configs.plans));
    let mut converter_written = false;
    if let Some(needs) = &moe_first {
        converter_written = moe_files(scan, template, &moe_analysis, needs, toy.as_ref(), configs);
    }
    init_file(scan, template, configs, &classes, &default_arch, main_config, moe_first.as_ref(), converter_written);
    toy_files(scan, toy.as_ref(), main_config, configs);
    Companions { moe: moe_analysis, moe_first, converter_written, default_arch, registry_key }
}

/// The model classes `__init__.py` registers: the upstream module's models
/// and heads, less what a config excludes.
fn registered_classes(facts: &ModelFacts, plans: &[BackendPlan]) -> Vec<String> {
    let excluded: Vec<&String> = plans.iter().flat_map(|p| p.retargeted.exclude.iter()).collect();
    facts
        .all
        .iter()
        .filter(|c| facts.has_class(c) && !c.ends_with("PreTrainedModel") && !excluded.contains(c))
        .filter(|c| c.ends_with("Model") || c.contains("For"))
        .cloned()
        .collect()
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

/// The checkpoint converter and `parallel_plan.py` of a MoE model; `true`
/// when the converter is planned.
fn moe_files(
    scan: &Scan,
    template: &Template,
    analysis: &MoeAnalysis,
    needs: &moe::MoeNeeds,
    toy: Option<&toy::Toy>,
    configs: &mut Configs,
) -> bool {
    let m = scan.model.as_str();
    let mut converter_written = false;
    let lic = configs.files.first().map(|f| licence(&f.text)).unwrap_or_default();
    if needs.converter.is_some() {
        let import = converter_import_line(&scan.project.settings.search_root, template.dir.as_deref());
        let dims = toy.and_then(|t| {
            let v: serde_json::Value = serde_json::from_str(&toy::config_json(t)).unwrap_or_default();
            patchgen_moe::config::MoeDims::from_value(Path::new("config.json"), &v).ok()
        });
        match (import, dims) {
            (Some(import), Some(dims)) => {
                let spec = moe::ConverterSpec {
                    licence: &lic,
                    converted_import: &import,
                    hf_name: m,
                    prefix: &scan.facts.prefix,
                    upstream_version: &scan.version.upstream.version,
                    dims: &dims,
                };
                match moe::converter_py(needs, &spec) {
                    Ok(text) => {
                        configs.files.push(PlannedFile {
                            path: scan.model_dir.join("checkpoint_tensor_converter.py"),
                            what: "checkpoint converter".into(),
                            text,
                        });
                        converter_written = true;
                    }
                    Err(e) => configs.warnings.push(format!("checkpoint converter not written: {e}")),
                }
            }
            (None, _) => configs.warnings.push("checkpoint converter not written: no project checkpoint_tensor_converter.py shows how to import `ConvertedCheckpointTensor`; __init__.py follows pattern A (lint PG401 will say so)".into()),
            (_, None) => configs.warnings.push(format!("checkpoint converter not written: no toy config (configuration_{m}.py) gives the experts count")),
        }
    }
    if let Some((_, t)) = &analysis.template_plan
        && !needs.ep_model_keys.is_empty()
        && let Some(text) = moe::parallel_plan_py(t, &needs.ep_model_keys)
    {
        configs.files.push(PlannedFile {
            path: scan.model_dir.join("parallel_plan.py"),
            what: "expert-parallel plan".into(),
            text,
        });
    }
    for plan in configs.plans.iter_mut() {
        plan.retargeted.exception_comments.extend(needs.lines.iter().skip(1).map(|l| format!("MoE {l}")));
    }
    converter_written
}

/// The model package's `__init__.py`: registered when a sibling shows how
/// (its `MODELING_REGISTRY` import), else empty with a warning.
#[allow(clippy::too_many_arguments)]
fn init_file(
    scan: &Scan,
    template: &Template,
    configs: &mut Configs,
    classes: &[String],
    default_arch: &str,
    main_config: Option<&MainConfig>,
    moe_first: Option<&moe::MoeNeeds>,
    converter_written: bool,
) {
    let m = scan.model.as_str();
    let facts = &scan.facts;
    let mut sibling_dirs: Vec<PathBuf> = template.dir.iter().cloned().collect();
    sibling_dirs.extend(scan.configs.iter().filter_map(|c| c.path.parent().map(Path::to_path_buf)));
    let registry = init_import_line(&sibling_dirs, "MODELING_REGISTRY");
    let written_backends: Vec<String> = configs.plans.iter().map(|p| p.backend.clone()).collect();
    let npu = if written_backends.len() > 1 { init_import_line(&sibling_dirs, "IS_NPU_AVAILABLE") } else { None };
    let Some(reg) = registry.as_ref().filter(|_| !classes.is_empty()) else {
        configs.files.push(PlannedFile {
            path: scan.model_dir.join("__init__.py"),
            what: "model package".into(),
            text: String::new(),
        });
        configs.warnings.push(match registry {
            None => "no project model __init__.py imports MODELING_REGISTRY: __init__.py left empty (register the model by hand)".into(),
            Some(_) => format!("{} has no `__all__` listing model classes: __init__.py left empty (register the model by hand)", facts.module),
        });
        return;
    };
    let mut keys: Vec<(String, Vec<String>, String)> = Vec::new();
    let key = main_config.and_then(|c| c.model_type.clone()).unwrap_or_else(|| m.to_string());
    keys.push((key, classes.to_vec(), default_arch.to_string()));
    // A VLM's text model has its own model_type when the module exports it.
    let causal = format!("{}ForCausalLM", facts.prefix);
    if scan.category.is_multimodal()
        && classes.contains(&causal)
        && let Some(t) = scan
            .configuration
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
    let lic = configs.files.first().map(|f| licence(&f.text)).unwrap_or_default();
    let (create, fqn) = moe::converter_functions(m);
    // A converter handling the base-model prefix: the base model class
    // maps index keys without it.
    let unprefixed: Vec<String> = match moe_first.and_then(|n| n.base_model.as_ref()) {
        Some(b) if moe_first.is_some_and(|n| !n.regex_renamings.is_empty()) => {
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
    let text =
        init::init_py(&lic, reg, npu.as_deref(), m, &written_backends, &regs, converter_written.then_some(&hook));
    configs.files.push(PlannedFile {
        path: scan.model_dir.join("__init__.py"),
        what: if converter_written { "model package (registry, pattern B)" } else { "model package (registry)" }.into(),
        text,
    });
    if written_backends.len() > 1 && npu.is_none() {
        configs
            .warnings
            .push("no project __init__.py imports IS_NPU_AVAILABLE: __init__.py imports the GPU module only".into());
    }
}

/// The toy config and its README under `tests/toy_config/<m>_toy`.
fn toy_files(scan: &Scan, toy: Option<&toy::Toy>, main_config: Option<&MainConfig>, configs: &mut Configs) {
    let m = scan.model.as_str();
    let toy_dir = scan.project.root.join("tests/toy_config").join(format!("{m}_toy"));
    match (toy, main_config) {
        (Some(toy), Some(mc)) => {
            let origin = format!("transformers/models/{m}/configuration_{m}.py");
            configs.files.push(PlannedFile {
                path: toy_dir.join("config.json"),
                what: "toy config".into(),
                text: toy::config_json(toy),
            });
            configs.files.push(PlannedFile {
                path: toy_dir.join("README.md"),
                what: "toy config README".into(),
                text: toy::readme(m, &mc.name, &origin, &scan.version.upstream.version, toy),
            });
        }
        _ => configs.warnings.push(format!("no configuration_{m}.py config class found: no toy config written")),
    }
}

/// Phase 6's plan: the rows of the project's test tables (a table that does
/// not parse stops `new` here, before anything is written).
pub(crate) fn test_rows(
    scan: &Scan,
    template: &Template,
    companions: &Companions,
    files: &[PlannedFile],
) -> Result<test_rows::TestRows, NewError> {
    let converter = companions
        .converter_written
        .then(|| files.iter().find(|f| f.path.ends_with("checkpoint_tensor_converter.py")))
        .flatten()
        .zip(companions.moe_first.as_ref())
        .and_then(|(f, n)| {
            Some(test_rows::converter_group::Written {
                text: &f.text,
                kind: n.converter.clone()?,
                renamings: n.renamings.clone(),
            })
        });
    test_rows::project::plan(&test_rows::project::Input {
        project: &scan.project,
        version: &scan.version,
        package: &scan.package,
        configs: &scan.configs,
        template: template.name.as_deref(),
        category: scan.category,
        facts: &scan.facts,
        registry_key: &companions.registry_key,
        configuration: scan.configuration.as_ref(),
        converter,
        ruff: &scan.ctx.ruff,
    })
    .map_err(|e| NewError::failed(e.to_string()))
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

/// The line importing `name` in a model package `__init__.py` of the project.
fn init_import_line(dirs: &[PathBuf], name: &str) -> Option<String> {
    dirs.iter().find_map(|d| {
        let text = std::fs::read_to_string(d.join("__init__.py")).ok()?;
        text.lines().find(|l| l.starts_with("from ") && l.ends_with(&format!("import {name}"))).map(str::to_string)
    })
}
