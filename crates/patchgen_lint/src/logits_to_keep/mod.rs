//! What PG301 (and the fixes that reuse it: `patchgen new`'s copy of a
//! forward, the server's code action) knows about `logits_to_keep` in a
//! causal-LM `forward`: whether a function is a target, the data flow from
//! the parameter to the loss ([`flow`]), the problems it finds
//! ([`analyze`]) and the slice-first fix ([`fix()`]).

use ruff_python_ast::StmtFunctionDef;
use ruff_text_size::TextRange;

use crate::pyfacts;

mod fix;
mod flow;
#[cfg(test)]
mod tests;

pub use fix::{Fix, fix, fixed_function_source};
use flow::keep_names;

/// The rule that reports these problems and offers the fix.
pub const RULE_CODE: &str = "PG301";

/// The parameter upstream forwards take.
pub const PARAM: &str = "logits_to_keep";

/// Whether an override target is a forward this rule checks.
pub fn is_target(target: &str) -> bool {
    match target.rsplit_once('.') {
        Some((class, "forward")) => class.ends_with("ForCausalLM") || class.ends_with("ForConditionalGeneration"),
        _ => false,
    }
}

/// What is wrong with one forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Upstream takes `logits_to_keep`; the replacement does not.
    MissingParameter,
    /// A loss call receives data not (yet) sliced with `logits_to_keep`.
    LossBeforeSlice {
        /// The loss call's callee (`self.loss_function`).
        call: TextRange,
        /// The argument carrying unsliced data.
        argument: TextRange,
        /// The first slice in the function, if any (where it happens instead).
        slice: Option<TextRange>,
    },
}

/// The problems of one `forward` replacement; `upstream_has_param`: whether
/// the upstream method takes `logits_to_keep` (`None`: unknown).
pub fn analyze(func: &StmtFunctionDef, upstream_has_param: Option<bool>) -> Vec<Problem> {
    let params = pyfacts::param_names(&func.parameters);
    let Some(param) = params.iter().find(|p| **p == PARAM || p.ends_with(PARAM)) else {
        return if upstream_has_param == Some(true) { vec![Problem::MissingParameter] } else { Vec::new() };
    };
    let keep = keep_names(func, param);
    match flow::first_unsliced_loss(func, &keep) {
        Some((call, argument, slice)) => vec![Problem::LossBeforeSlice { call, argument, slice }],
        None => Vec::new(),
    }
}
