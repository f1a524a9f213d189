//! An inherited PG301 fixed in a copy: when the template's causal-LM
//! `forward` replacement feeds the loss before slicing with
//! `logits_to_keep` (lint PG301, the template's config has the same error),
//! `new` does not keep the reuse: it copies the replacement into the new
//! config (renamed as copied helpers are, the `def` name's model prefix
//! too), applies PG301's fix (`patchgen_lint::logits_to_keep::fix`:
//! slice first, as upstream) and says where it came from. Only when the
//! rule offers a fix; otherwise the reuse stays with its `TODO` (`super`).

use patchgen_config::plan::PatchType;
use serde::Serialize;

use super::retarget::Carried;
use patchgen_core::codegen::text::{split_leading_comments, strip_patch_decorators};
use patchgen_lint::logits_to_keep;

/// A carried replacement written into the new config instead of imported.
#[derive(Clone, Debug, Serialize)]
pub struct Copied {
    /// `<template config>:<line of the def>`.
    pub from: String,
    /// The function's name in the copy (the template's, its model prefix renamed).
    pub name: String,
    /// The function, fixed and renamed, without decorators or comments.
    #[serde(skip)]
    pub source: String,
    /// Why it is a copy, and how to make it a reuse again (the comment above it).
    pub note: String,
}

/// The copy of `c` with PG301 fixed, or `None` when the rule offers no fix.
/// `from`: the template config (relative path) and the line of the
/// replacement's `def`; `models`: the template's and the new HF model
/// names (`qwen3`, `mistral`) for the `def` name.
pub fn copy_fixed(c: &Carried, from: &str, models: (&str, &str)) -> Option<Copied> {
    if c.patch_type != PatchType::MethodOverride || !logits_to_keep::is_target(&c.target) {
        return None;
    }
    let (_, code) = split_leading_comments(&c.source);
    let function = patchgen_python::pytext::dedent(&strip_patch_decorators(&code));
    let (fixed, fix) = logits_to_keep::fixed_function_source(&function)?;
    let name = rename(&c.import_name, models);
    let fixed = fixed.replacen(&format!("def {}(", c.import_name), &format!("def {name}("), 1);
    let note = format!(
        "patchgen new: copied from {from}, not reused: the template's version has PG301 (the loss receives `{var}` \
         before the `{param}` slice); fixed here: `{var} = {var}[{index}]` first, as upstream (`{param}=0` keeps \
         every position). Once fixed there, this copy can become a reuse again.",
        var = fix.var,
        index = fix.index,
        param = logits_to_keep::PARAM,
    );
    Some(Copied { from: from.to_string(), name, source: fixed.trim_end().to_string(), note })
}

/// `qwen3_forward` → `mistral_forward` (the template's model name as a
/// leading word only).
fn rename(name: &str, (from, to): (&str, &str)) -> String {
    match name.strip_prefix(from).and_then(|rest| rest.strip_prefix('_')) {
        Some(rest) if !from.is_empty() => format!("{to}_{rest}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carried(source: &str) -> Carried {
        Carried {
            patch_type: PatchType::MethodOverride,
            target: "MistralForCausalLM.forward".into(),
            template_target: "Qwen3ForCausalLM.forward".into(),
            import_module: "pkg.qwen3_config".into(),
            import_name: "qwen3_forward".into(),
            name_map: vec![("Qwen3".into(), "Mistral".into())],
            description: None,
            header: Vec::new(),
            todos: Vec::new(),
            notes: Vec::new(),
            source: source.into(),
            defined_at: None,
            copy: None,
        }
    }

    const BUGGY: &str = "# ── MistralForCausalLM.forward ──\n@config.override_method(\n    \"MistralForCausalLM.forward\",\n    description=\"d\",\n)\ndef qwen3_forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):\n    hidden_states = self.model(input_ids).last_hidden_state\n    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n    if labels is not None:\n        loss = self.loss_function(hidden_states=hidden_states, labels=labels)\n        logits = None\n    else:\n        loss = None\n        logits = self.lm_head(hidden_states[:, slice_indices, :])\n    return loss, logits\n";

    #[test]
    fn copies_the_function_fixed_and_renamed() {
        let c = copy_fixed(&carried(BUGGY), "pkg/qwen3_config.py:6", ("qwen3", "mistral")).expect("a fix");
        let expected = "def mistral_forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):\n    hidden_states = self.model(input_ids).last_hidden_state\n    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n    hidden_states = hidden_states[:, slice_indices, :]\n    if labels is not None:\n        loss = self.loss_function(hidden_states=hidden_states, labels=labels)\n        logits = None\n    else:\n        loss = None\n        logits = self.lm_head(hidden_states)\n    return loss, logits";
        assert_eq!(c.source, expected);
        assert_eq!(c.name, "mistral_forward");
        assert_eq!(rename("qwen3forsequenceclassification", ("qwen3", "mistral")), "qwen3forsequenceclassification");
        assert!(c.note.contains("copied from pkg/qwen3_config.py:6"), "{}", c.note);
        assert!(c.note.contains("`hidden_states = hidden_states[:, slice_indices, :]` first"), "{}", c.note);
    }

    #[test]
    fn no_copy_without_a_fix_or_for_another_target() {
        // The slice happens only under `if self.training:`: no single point to slice at.
        let ambiguous = BUGGY.replace(
            "    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n",
            "    if self.training:\n        slice_indices = slice(-logits_to_keep, None)\n",
        );
        assert!(copy_fixed(&carried(&ambiguous), "x:1", ("qwen3", "mistral")).is_none());
        let mut other = carried(BUGGY);
        other.target = "MistralForSequenceClassification.forward".into();
        assert!(copy_fixed(&other, "x:1", ("qwen3", "mistral")).is_none());
    }
}
