//! Which patches a bump ports: every `override_method`, `replace_function`
//! and `replace_class` registration of every config (the one the generator
//! applies per target), its target found in both upstreams as `survey`
//! finds it, and who merges a patch function several registrations share.
//!
//! A patch function is merged once, by the registration in the config file
//! that defines it (else by the first registration without `name_map`):
//! its siblings that import it (often with a `name_map`) get it through
//! that import and are reported as `shared`.

use std::collections::HashMap;
use std::path::PathBuf;

use rayon::prelude::*;

use patchgen_config::plan::{PatchType, SourceObject};
use patchgen_core::error::RunError;
use patchgen_core::pipeline::{Context, Failure};
use patchgen_core::survey::body::TargetText;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::targets;
use patchgen_diagnostics::Diagnostic;

/// Who ports a registration's patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Nothing to port: the target is unchanged, or not in both versions.
    Nothing,
    /// This registration ports its patch.
    Port,
    /// The same patch function is ported through another registration
    /// (the config module named here).
    SharedWith(String),
    /// The patch cannot be ported here: why.
    Skipped(&'static str),
}

#[derive(Clone, Debug)]
pub struct Registration {
    pub target: String,
    pub patch_type: PatchType,
    /// The config line that registers it.
    pub line: usize,
    pub old: Option<TargetText>,
    pub new: Option<TargetText>,
    /// The patch's source (`None`: unknown, e.g. a `replacement=` from outside the project).
    pub object: Option<SourceObject>,
    pub role: Role,
}

impl Registration {
    /// The target is in both versions with another text.
    pub fn changed(&self) -> bool {
        matches!((&self.old, &self.new), (Some(a), Some(b)) if a.text != b.text)
    }
}

/// One config's registrations, or why it could not be read.
#[derive(Clone, Debug)]
pub struct SelectedConfig {
    pub module: String,
    pub path: PathBuf,
    pub registrations: Vec<Registration>,
    pub error: Option<Diagnostic>,
}

/// The config modules to bump: the named ones, else every discovered config.
pub fn modules(ctx: &Context, named: &[String]) -> Result<Vec<String>, RunError> {
    if named.is_empty() {
        return Ok(ctx
            .project
            .discover()
            .map_err(|e| RunError::Usage(e.to_string()))?
            .into_iter()
            .map(|c| c.module)
            .collect());
    }
    let modules: Vec<String> = named.iter().map(|m| ctx.project.normalize_module(m)).collect();
    if let Some(m) = modules.iter().find(|m| ctx.loader.find(m).is_none()) {
        return Err(RunError::Usage(format!(
            "no such config module: {m} under {}\n  help: `patchgen list` shows the config modules",
            ctx.project.package_root().display()
        )));
    }
    Ok(modules)
}

/// Every config's registrations with their targets in both versions, and
/// the role of each (run inside the caller's thread pool).
pub fn select(
    ctx: &Context,
    modules: &[String],
    config_name: &str,
    from: &Version,
    to: &Version,
) -> Vec<SelectedConfig> {
    let mut configs: Vec<SelectedConfig> = modules.par_iter().map(|m| read(ctx, m, config_name, from, to)).collect();
    assign_roles(&mut configs);
    configs
}

fn read(ctx: &Context, module: &str, config_name: &str, from: &Version, to: &Version) -> SelectedConfig {
    let (plan, path) = match ctx.evaluate(module, config_name) {
        Ok((plan, path, _)) => (plan, path),
        Err(f) => {
            let path = ctx.loader.find(module).map(|(p, _)| p).unwrap_or_default();
            let error = match f {
                Failure::NotAConfig { .. } => None,
                f => Some(f.diagnostic(module)),
            };
            return SelectedConfig { module: module.to_string(), path, registrations: Vec::new(), error };
        }
    };
    let mut error = None;
    let mut locate = |v: &Version, p: &patchgen_config::plan::Patch| match targets::locate(
        v,
        &plan.source_module,
        p.patch_type,
        &p.target,
    ) {
        Ok(t) => t,
        Err(e) => {
            error.get_or_insert_with(|| {
                patchgen_diagnostics::codes::SURVEY_FAILED.diagnostic(e.to_string()).config(module.to_string())
            });
            None
        }
    };
    let registrations = targets::targets(&plan)
        .into_iter()
        .map(|p| Registration {
            target: p.target.clone(),
            patch_type: p.patch_type,
            line: p.registered_at.line,
            old: locate(from, p),
            new: locate(to, p),
            object: p.replacement.clone().filter(|o| !o.source.is_empty() && o.first_line > 0),
            role: if p.name_map.is_some() { Role::Skipped("name_map") } else { Role::Nothing },
        })
        .collect();
    SelectedConfig { module: module.to_string(), path, registrations, error }
}

/// A patch function's identity: the file and line it is defined at.
type Key = (PathBuf, usize);

fn key(o: &SourceObject) -> Key {
    (o.defined_at.path.clone(), o.first_line)
}

/// Who ports what: per patch function, one registration (in the config
/// that defines it, else the first without `name_map`); the others share.
fn assign_roles(configs: &mut [SelectedConfig]) {
    let mut owner: HashMap<Key, (usize, usize, bool)> = HashMap::new();
    for (ci, c) in configs.iter().enumerate() {
        for (ri, r) in c.registrations.iter().enumerate() {
            let Some(o) = &r.object else { continue };
            if !r.changed() || r.role != Role::Nothing {
                continue;
            }
            let home = o.defined_at.path == c.path;
            match owner.get(&key(o)) {
                Some(&(_, _, true)) => {}
                Some(_) if !home => {}
                _ => {
                    owner.insert(key(o), (ci, ri, home));
                }
            }
        }
    }
    let names: Vec<String> = configs.iter().map(|c| c.module.clone()).collect();
    for (ci, c) in configs.iter_mut().enumerate() {
        for (ri, r) in c.registrations.iter_mut().enumerate() {
            if !r.changed() {
                r.role = Role::Nothing;
                continue;
            }
            let Some(o) = &r.object else {
                r.role = Role::Skipped("no source");
                continue;
            };
            match owner.get(&key(o)) {
                Some(&(oc, or, _)) if (oc, or) == (ci, ri) => r.role = Role::Port,
                Some(&(oc, _, _)) => r.role = Role::SharedWith(names[oc].clone()),
                None => {}
            }
        }
    }
}
