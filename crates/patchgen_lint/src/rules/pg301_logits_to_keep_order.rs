//! PG301 logits-to-keep-order: a patched causal-LM `forward` that feeds the loss before slicing with `logits_to_keep`, or drops the parameter.
//!
//! ## What it does
//! Checks that a patched `*ForCausalLM.forward` or
//! `*ForConditionalGeneration.forward` applies `logits_to_keep` to the hidden
//! states *before* they reach the loss, on every path, and that it still
//! accepts `logits_to_keep` when the upstream method does.
//!
//! ## Why is this bad?
//! Upstream slices first (`logits = self.lm_head(hidden_states[:, slice_indices, :])`)
//! and computes the loss from what it kept. A fused-loss override that passes
//! the unsliced `hidden_states` to the loss and slices only in the
//! `labels is None` branch computes the loss over every position when a caller
//! asks for fewer (`logits_to_keep > 0` with labels: RL actors, evaluation
//! with a prompt mask): the loss is silently taken over the wrong positions.
//! An override that drops the parameter sends `logits_to_keep` into
//! `**kwargs`, where the decoder ignores it or fails.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
//!     hidden_states = self.model(input_ids, **kwargs).last_hidden_state
//!     slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
//!     if labels is not None:
//!         loss, logits, _ = self.loss_function(logits=None, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
//!     else:
//!         logits = self.lm_head(hidden_states[:, slice_indices, :])
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
//!     hidden_states = self.model(input_ids, **kwargs).last_hidden_state
//!     slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
//!     hidden_states = hidden_states[:, slice_indices, :]
//!     if labels is not None:
//!         loss, logits, _ = self.loss_function(logits=None, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
//!     else:
//!         logits = self.lm_head(hidden_states)
//! ```
//!
//! ## Fix
//! The diagnostic's help spells out the edit when it is unambiguous, and
//! `fix` computes it (there is no `lint --fix`; `patchgen new` applies it
//! to a template forward it copies instead of reusing, see `docs/new.md`):
//! right after the top-level statement binding the last of what the slice
//! needs (`slice_indices = ...`, or the hidden states themselves when the
//! function slices with `logits_to_keep` directly) it inserts
//! `hidden_states = hidden_states[:, slice_indices, :]`, and each later
//! `hidden_states[:, slice_indices, :]` becomes `hidden_states` — the
//! "Use instead" above from the "Example". Same semantics as upstream
//! (slice, then logits and loss); `logits_to_keep=0` slices
//! `slice(-0, None)`, every position, so training is unchanged. Offered
//! only when the unsliced argument of the loss is a plain name bound by
//! top-level assignments before the loss, every slice of it has the same
//! index and follows those bindings, and afterwards it is used only in
//! those slices and as a direct argument of a loss or `*head*` call (not
//! returned, not inspected); the fixed function is checked again.
//!
//! ## How it decides
//! "Keep" values are the `logits_to_keep` parameter and every local computed
//! from it (`slice_indices`, whatever it is called). A subscript whose index
//! mentions a keep value is a *slice*; what it subscripts (`hidden_states`,
//! `outputs.last_hidden_state`) is *unsliced* until reassigned from a slice,
//! and values computed from unsliced data (`logits = self.lm_head(h)`) are
//! unsliced too. Walking the body in order (both arms of an `if` merged, an
//! `if` on a keep value taken as applied), every loss call (a callee whose
//! name contains `loss`, not a load-balancing one) that receives unsliced data
//! is reported, first one per function.

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

use crate::logits_to_keep::{self, PARAM, Problem, analyze, fix, is_target};
use crate::{LintContext, Rule};
use crate::{patched, pyfacts};
use patchgen_diagnostics::{Diagnostic, Severity};

pub const RULE: Rule = Rule {
    code: logits_to_keep::RULE_CODE,
    name: "logits-to-keep-order",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg301_logits_to_keep_order.rs"),
    check,
    check_project: None,
};

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for stmt in ctx.generated.body() {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let target = format!("{}.forward", class.name.id);
        if !is_target(&target) {
            continue;
        }
        let Some(forward) = pyfacts::method(class, "forward") else {
            continue;
        };
        // Only forwards a config wrote (an override or a replaced class).
        let def_line = ctx.generated.line_of(forward.name.start());
        let Some(origin) = ctx.origin_of_line(def_line) else {
            continue;
        };
        let fallback = origin.patch.map(|i| ctx.plan.patches[i].registered_at.clone());
        let upstream_has_param = patched::with_upstream_method(ctx, class.name.id.as_str(), "forward", |f| {
            pyfacts::param_names(&f.parameters).contains(&PARAM)
        });
        for problem in analyze(forward, upstream_has_param) {
            let d = match problem {
                Problem::MissingParameter => {
                    let d = RULE.diagnostic(format!(
                        "`{target}` drops the `{PARAM}` parameter the upstream method takes: it lands in `**kwargs` and the logits are never trimmed"
                    ))
                    .help(format!(
                        "accept `{PARAM}: int | torch.Tensor = 0` and slice the hidden states with it before the lm_head and the loss"
                    ));
                    ctx.at_generated(d, forward.name.start(), fallback.as_ref())
                }
                Problem::LossBeforeSlice { call, argument, slice } => {
                    let callee = &ctx.generated.text[call];
                    let arg = &ctx.generated.text[argument];
                    let help = match fix(forward, &ctx.generated.text) {
                        Some(f) => f.help(),
                        None => "slice first (`hidden_states = hidden_states[:, slice_indices, :]` before `if labels is not None:`), then compute logits and loss from the sliced tensor".to_string(),
                    };
                    let mut d = RULE
                        .diagnostic(format!(
                            "`{target}`: `{callee}(...)` receives `{arg}` before it is sliced with `{PARAM}`; with labels and `{PARAM} > 0` the loss covers every position"
                        ))
                        .help(help);
                    d = ctx.at_generated(d, call.start(), fallback.as_ref());
                    if let Some(slice) = slice {
                        let line = ctx.generated.line_of(slice.start());
                        let loc = ctx.config_location_of_line(line).unwrap_or_else(|| ctx.generated_location(line));
                        d = d.related(loc, "`logits_to_keep` is applied only here");
                    }
                    d
                }
            };
            out.push(d);
        }
    }
    out
}
