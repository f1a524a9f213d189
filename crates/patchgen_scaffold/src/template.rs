//! Phase 2 of `new`: the template — the project model the new one is
//! scaffolded from (protocol step 1.7, "prefer reuse over copy-paste").
//! `--like M` names it (an error with the nearest project models when the
//! project has no config for `M`); otherwise the first of the category's
//! reference models the project has; otherwise none (the built-in skeleton).

use std::path::PathBuf;

use crate::NewError;
use crate::facts::ModelFacts;
use crate::scan::Scan;

/// The chosen template and why.
pub(crate) struct Template {
    /// Its HF model name; `None`: the built-in skeleton.
    pub(crate) name: Option<String>,
    /// Why it was chosen (printed with the report).
    pub(crate) reason: String,
    /// Its upstream facts (when there is a template).
    pub(crate) facts: Option<ModelFacts>,
    /// The model package directory of its first config.
    pub(crate) dir: Option<PathBuf>,
}

/// Choose the template for `scan`'s model (`like`: `--like`).
pub(crate) fn choose(scan: &Scan, like: Option<&str>) -> Result<Template, NewError> {
    // A project model by HF name, or by its package directory's name.
    let by_name = |name: &str| -> Option<String> {
        let dir = scan.project.settings.search_root.join(name);
        scan.configs
            .iter()
            .find(|c| c.hf_name == name || c.path.parent() == Some(dir.as_path()))
            .map(|c| c.hf_name.clone())
    };
    let category = scan.category;
    let (name, reason) = match like {
        Some(like) => match by_name(like) {
            Some(t) => (Some(t), format!("--like {like}")),
            None => {
                let known: Vec<&str> = scan.configs.iter().map(|c| c.hf_name.as_str()).collect();
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
    let facts = match &name {
        Some(t) => Some(scan.facts_of(t).map_err(|e| NewError::failed(e.to_string()))?),
        None => None,
    };
    let dir = name.as_deref().and_then(|t| scan.config_of(t)).and_then(|c| c.path.parent().map(PathBuf::from));
    Ok(Template { name, reason, facts, dir })
}
