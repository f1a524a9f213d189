//! Static evaluation of patch configs: config file → `PatchPlan`.
//!
//! Configs are read, never executed. `eval` runs the declarative subset of
//! Python they are written in (`eval/stmt.rs` statements, `eval/expr.rs`
//! expressions), over the values of `value`; `builtins` are Python's
//! built-in names and functions, `methods/` the methods of each modelled
//! type, `objects` attribute and item access; `dsl` is the patch DSL, its
//! calls bound by `args`; `error` what evaluation reports; `source`
//! extracts replacement sources exactly as `inspect` would; `to_plan`
//! checks the result into a `PatchPlan`.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod args;
mod builtins;
mod dsl;
mod error;
pub mod eval;
pub mod loader;
mod methods;
mod objects;
pub mod plan;
pub mod source;
mod to_plan;

#[cfg(test)]
mod tests;
pub mod value;

pub use eval::{EvalError, Warning};
pub use loader::{ModuleLoader, Overlay, ProjectLoader};
pub use plan::*;

use value::Value;

/// The outcome of evaluating one config module.
pub struct Evaluated {
    pub plan: PatchPlan,
    /// The config module's file.
    pub path: std::path::PathBuf,
    pub warnings: Vec<Warning>,
}

/// Evaluate `module` afresh and return the `PatchPlan` of its `config_name`
/// variable. `Ok(None)` when the module has no such `PatchConfig` (the
/// reference's discovery skips such modules).
pub fn evaluate(loader: &dyn ModuleLoader, module: &str, config_name: &str) -> Result<Option<Evaluated>, EvalError> {
    let mut ev = eval::Evaluator::new(loader);
    let ns = ev.module_namespace(module, None)?;
    let path = ns
        .borrow()
        .get("__file__")
        .and_then(|v| if let Value::Str(s) = v { Some(std::path::PathBuf::from(&**s)) } else { None })
        .unwrap_or_default();
    let value = ns.borrow().get(config_name).cloned();
    let Some(value) = value else { return Ok(None) };
    let value = ev.force(value)?;
    let Value::Config(config) = value else { return Ok(None) };
    let config = config.borrow().clone();
    let plan = to_plan::to_plan(&mut ev, &config, module)?;
    Ok(Some(Evaluated { plan, path, warnings: ev.warnings }))
}
