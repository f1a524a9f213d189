//! The glue between `patchgen new` and [`super::plan`]: the names of the
//! new model and of its donors (the template, then the category's other
//! reference models the project has), read from the project — registry
//! keys from each model package's `__init__.py`
//! (`MODELING_REGISTRY.register("<key>")`), toy directories from
//! `tests/toy_config/*/config.json` (`model_type`), classes and prefix from
//! the upstream modules.

use std::path::Path;

use ruff_python_ast::Expr;

use super::rename::ModelNames;
use super::{AttnSupport, Request, TestRows, TestRowsError, converter_group};
use crate::ProjectConfig;
use crate::configuration::ConfigurationModule;
use crate::facts::{Category, ModelFacts};
use patchgen_core::normalize::Ruff;
use patchgen_core::project::Project;
use patchgen_core::survey::modules::Version;

/// What `new` knows when it plans the rows.
pub struct Input<'a> {
    pub project: &'a Project,
    pub version: &'a Version,
    pub package: &'a str,
    pub(crate) configs: &'a [ProjectConfig],
    pub template: Option<&'a str>,
    pub category: Category,
    pub facts: &'a ModelFacts,
    pub configuration: Option<&'a ConfigurationModule>,
    pub registry_key: &'a str,
    pub converter: Option<converter_group::Written<'a>>,
    pub ruff: &'a Ruff,
}

/// The string arguments of `*.register("<key>")` calls in a package `__init__.py`.
pub fn registered_keys(init: &str) -> Vec<String> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V(Vec<String>);
    impl<'a> Visitor<'a> for V {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr
                && matches!(&*c.func, Expr::Attribute(a) if a.attr.as_str() == "register")
                && let Some(s) = c.arguments.args.first().and_then(super::find::str_value)
                && !self.0.contains(&s)
            {
                self.0.push(s);
            }
            visitor::walk_expr(self, expr);
        }
    }
    let Ok(parsed) = ruff_python_parser::parse_module(init) else {
        return Vec::new();
    };
    let mut v = V(Vec::new());
    for s in &parsed.syntax().body {
        v.visit_stmt(s);
    }
    v.0
}

/// The toy config directories whose `model_type` is one of `keys` (or
/// named `<name>_toy`), sorted, the shortest name first.
fn toy_dirs(root: &Path, keys: &[String], names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(root.join("tests/toy_config")) else {
        return out;
    };
    for e in rd.flatten() {
        let dir = e.file_name().to_string_lossy().into_owned();
        let model_type = std::fs::read_to_string(e.path().join("config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("model_type").and_then(|m| m.as_str()).map(str::to_string));
        let named = names.iter().any(|n| dir == format!("{n}_toy") || dir == format!("{}_toy", n.replace('_', "")));
        if named || model_type.is_some_and(|t| keys.contains(&t)) {
            out.push(dir);
        }
    }
    out.sort_by_key(|d| (d.len(), d.clone()));
    out
}

/// A project model's names.
fn donor(input: &Input<'_>, config: &ProjectConfig) -> Option<ModelNames> {
    let facts = ModelFacts::read(input.version, input.package, &config.hf_name).ok()?;
    let dir_path = config.path.parent()?;
    let dir = dir_path.file_name()?.to_string_lossy().into_owned();
    let mut keys =
        std::fs::read_to_string(dir_path.join("__init__.py")).map(|t| registered_keys(&t)).unwrap_or_default();
    if keys.is_empty() {
        keys.push(config.hf_name.clone());
    }
    let toys = toy_dirs(&input.project.root, &keys, &[&config.hf_name, &dir]);
    Some(ModelNames {
        hf: config.hf_name.clone(),
        dir,
        prefix: facts.prefix.clone(),
        keys,
        toy_dirs: toys,
        classes: facts.classes.clone(),
    })
}

/// Plan the rows for the model `new` is writing.
pub fn plan(input: &Input<'_>) -> Result<TestRows, TestRowsError> {
    let m = input.facts.hf_name.clone();
    let mut keys = vec![input.registry_key.to_string()];
    if input.category.is_multimodal()
        && let Some(k) = input
            .configuration
            .and_then(|c| c.class(&format!("{}TextConfig", input.facts.prefix)))
            .and_then(|c| c.model_type.clone())
        && !keys.contains(&k)
    {
        keys.push(k);
    }
    let new = ModelNames {
        hf: m.clone(),
        dir: m.clone(),
        prefix: input.facts.prefix.clone(),
        keys,
        toy_dirs: vec![format!("{m}_toy")],
        classes: input.facts.classes.clone(),
    };
    // The template, then the category's reference models the project has.
    let mut order: Vec<&str> = input.template.into_iter().collect();
    order.extend(input.category.templates().iter().copied().filter(|t| Some(*t) != input.template));
    let mut donors = Vec::new();
    for name in order {
        if let Some(c) = input
            .configs
            .iter()
            .find(|c| c.hf_name == name && c.backend == "gpu")
            .or_else(|| input.configs.iter().find(|c| c.hf_name == name))
            && let Some(d) = donor(input, c)
        {
            donors.push(d);
        }
    }
    let mut project_aliases: Vec<String> = Vec::new();
    for c in input.configs {
        let dir = c.path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        for a in [Some(c.hf_name.clone()), dir].into_iter().flatten() {
            for a in [a.replace('_', ""), a] {
                if !project_aliases.contains(&a) {
                    project_aliases.push(a);
                }
            }
        }
    }
    let req = Request {
        root: &input.project.root,
        category: input.category,
        new,
        donors,
        project_aliases,
        attn: AttnSupport::of_module(input.facts.file.body()),
        converter: input.converter.clone(),
        ruff: Some(input.ruff),
    };
    super::plan(&req)
}
