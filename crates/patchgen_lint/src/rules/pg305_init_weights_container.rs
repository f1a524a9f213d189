//! PG305 init-weights-container: an `_init_weights` branch keyed on a module class that owns no parameters or buffers itself (transformers ≥ 5.16).
//!
//! ## What it does
//! For every `_init_weights` method of the generated module (patched or
//! kept from upstream), checks each `isinstance(module, X)` (also a tuple of
//! classes) where `X` is a class of the generated module: `X` and its bases
//! in the module must themselves create a parameter or buffer
//! (`self.w = nn.Parameter(...)`, `register_parameter`, `register_buffer`,
//! `nn.Buffer(...)`) or derive from a parameter-owning `torch.nn` layer
//! (`nn.Linear`, `nn.Embedding`, `nn.LayerNorm`, `nn.Conv*`, ...). Classes
//! imported from elsewhere, or with bases that cannot be followed, are
//! given the benefit of the doubt. Runs only when the upstream version is
//! 5.16 or newer. A class whose `_initialize_weights` (its own or a base's
//! in the module) passes `is_custom_code=False` to the next one is not
//! checked: its modules are initialised as transformers' own classes are,
//! parameter-less ones included.
//!
//! ## Why is this bad?
//! From transformers 5.16, `_initialize_weights` skips every module of
//! *custom code* (any class whose module is not under `transformers.`, as
//! every generated module's is) that has no parameters or buffers of its
//! own. A branch keyed on a container (`SparseMoeBlock`, which only holds
//! `experts` and `gate`) never runs: on random initialisation the experts
//! keep whatever `torch.empty` left (Qwen3-Omni-MoE experts came out with
//! `std=0.0`) and nothing reports it.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3OmniMoePreTrainedModel._init_weights")
//! def _init_weights(self, module):
//!     super()._init_weights(module)
//!     if isinstance(module, Qwen3OmniMoeThinkerTextSparseMoeBlock):
//!         init.normal_(module.experts.gate_up_proj, std=self.config.initializer_range)
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3OmniMoePreTrainedModel._init_weights")
//! def _init_weights(self, module):
//!     super()._init_weights(module)
//!     if isinstance(module, Qwen3OmniMoeThinkerTextExperts):  # owns gate_up_proj
//!         init.normal_(module.gate_up_proj, std=self.config.initializer_range)
//! ```
//! or, where the tensors belong to torch layers (`module.o_proj.weight`, an
//! `nn.Linear`: no class to key on), initialise the generated code as
//! transformers' own (it initialises through `transformers.initialization`,
//! which skips loaded tensors):
//! ```python
//! @config.override_method("NanoChatPreTrainedModel._initialize_weights")
//! def _initialize_weights(self, module, is_custom_code: bool = False):
//!     super()._initialize_weights(module, is_custom_code=False)
//! ```

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use crate::init_weights::{initialises_as_transformers, is_param_less, isinstance_checks};
use crate::{LintContext, Rule, patched, pyfacts};
use patchgen_diagnostics::{Diagnostic, Severity};

pub const RULE: Rule = Rule {
    code: "PG305",
    name: "init-weights-container",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg305_init_weights_container.rs"),
    check,
    check_project: None,
};

/// The first version whose `_initialize_weights` skips parameter-less
/// modules of custom code.
pub const SINCE: (u64, u64) = (5, 16);

/// `major.minor` of a version string (`5.16.1` → (5, 16)).
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split('.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor: String = parts.next()?.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((major, minor.parse().ok()?))
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if major_minor(&ctx.shared.upstream.upstream.version).is_none_or(|v| v < SINCE) {
        return out;
    }
    let body = ctx.generated.body();
    let anchor = patched::config_anchor(ctx);
    for stmt in body {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let Some(init) = pyfacts::method(class, "_init_weights") else {
            continue;
        };
        if initialises_as_transformers(body, class) {
            continue;
        }
        for (call, names) in isinstance_checks(&init.body) {
            for name in names {
                if is_param_less(body, name) != Some(true) {
                    continue;
                }
                let qual = format!("{}._init_weights", class.name.id);
                let patched = ctx.origin_of_line(ctx.generated.line_of(init.name.start())).is_some();
                let d = RULE
                    .diagnostic(format!(
                        "`{qual}` branches on `{name}`, which owns no parameters or buffers itself: transformers {}.{}+ skips such modules in custom code, so this branch never runs and what it initialises stays uninitialised",
                        SINCE.0, SINCE.1
                    ))
                    .help(if patched {
                        format!("key the branch on the leaf classes that own the tensors (the experts / router classes `{name}` holds) and initialise their own parameters")
                    } else {
                        format!("override `{qual}` in the config and key its branches on the leaf classes that own the tensors, not on `{name}`")
                    });
                out.push(ctx.at_generated(d, call.start(), Some(&anchor)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(major_minor("5.16.1"), Some((5, 16)));
        assert_eq!(major_minor("5.9.0"), Some((5, 9)));
        assert_eq!(major_minor("5.17.0.dev0"), Some((5, 17)));
        assert_eq!(major_minor("unknown"), None);
        assert!(major_minor("5.9.0").unwrap() < SINCE);
    }
}
