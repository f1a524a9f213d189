//! A model argument → the HF module name: a config module (its
//! `source_module` decides), a model directory of the project (the
//! `source_module` of its configs), else the HF module name itself.

use std::path::{Path, PathBuf};

use super::ReferenceError;
use crate::pipeline::Context;
use crate::project::Project;

/// The HF module name and how it was found.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub name: String,
    /// `module name`, `config <module>`, `model directory <dir>`.
    pub how: String,
    /// The project's model directory, when the argument named one.
    pub model_dir: Option<PathBuf>,
}

/// `transformers.models.<m>.modeling_<m>` → `<m>`.
pub fn hf_name_of(source_module: &str, package: &str) -> Option<String> {
    let rest = source_module.strip_prefix(package)?.strip_prefix(".models.")?;
    let (name, module) = rest.split_once('.')?;
    (module.starts_with("modeling_") || module.starts_with("modular_")).then(|| name.to_string())
}

fn source_module_of(ctx: &Context, module: &str) -> Result<String, ReferenceError> {
    ctx.evaluate(module, "config")
        .map(|(plan, _, _)| plan.source_module)
        .map_err(|e| ReferenceError::failed(e.to_string()))
}

fn from_source_module(
    source: &str,
    package: &str,
    how: String,
    model_dir: Option<PathBuf>,
) -> Result<Resolved, ReferenceError> {
    match hf_name_of(source, package) {
        Some(name) => Ok(Resolved { name, how, model_dir }),
        None => Err(ReferenceError::usage(format!(
            "{how}: source_module `{source}` is not a `{package}.models.<m>.modeling_<m>` module\n  help: pass the HF module name instead"
        ))),
    }
}

/// The config modules directly in a model directory, sorted (GPU first).
pub fn configs_in(project: &Project, dir: &Path) -> Vec<String> {
    let mut found: Vec<crate::project::ConfigFile> =
        project.discover().unwrap_or_default().into_iter().filter(|c| c.path.parent() == Some(dir)).collect();
    found.sort_by_key(|c| (!c.module.ends_with("_gpu_patch_gen_config"), c.module.clone()));
    found.into_iter().map(|c| c.module).collect()
}

pub fn resolve(
    arg: &str,
    project: Option<&Project>,
    cwd: &Path,
    package: &str,
    env: &crate::settings::Env,
) -> Result<Resolved, ReferenceError> {
    let Some(project) = project else {
        return Ok(Resolved { name: arg.to_string(), how: "module name".into(), model_dir: None });
    };
    let ctx = || Context::new(project.clone(), cwd, None, env);
    if arg.contains('.') {
        let module = project.normalize_module(arg);
        let ctx = ctx();
        if let Some((path, _)) = ctx.loader.find(&module) {
            let source = source_module_of(&ctx, &module)?;
            return from_source_module(
                &source,
                package,
                format!("config {module}"),
                path.parent().map(Path::to_path_buf),
            );
        }
        return Err(ReferenceError::usage(format!(
            "{arg}: no such config module under {}\n  help: pass the HF module name (qwen3) or the project's model directory",
            project.package_root().display()
        )));
    }
    let dir = project.settings.search_root.join(arg);
    if dir.is_dir() {
        let configs = configs_in(project, &crate::project::resolve(&dir));
        if let Some(first) = configs.first() {
            let source = source_module_of(&ctx(), first)?;
            return from_source_module(&source, package, format!("model directory {arg}, {first}"), Some(dir));
        }
    }
    Ok(Resolved { name: arg.to_string(), how: "module name".into(), model_dir: dir.is_dir().then_some(dir) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_names() {
        assert_eq!(
            hf_name_of("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl", "transformers").as_deref(),
            Some("qwen2_5_vl")
        );
        assert_eq!(hf_name_of("toylib.modeling_toy", "transformers"), None);
    }
}
