//! PG106 attribute-drift: an `override_method` body reads `self.X` that the target's class does not define in the upstream linted against.
//!
//! ## What it does
//! For each `override_method("C.m")`, lists the attributes the replacement
//! reads on `self` without assigning them itself, and looks each up on `C`
//! as the linted upstream defines it: assigned on `self` in any of its
//! methods (`register_buffer` and friends included), a class attribute,
//! property or method, of `C` or of a base (bases are followed across
//! transformers modules); assigned by the config's own patches of `C`
//! (a patched `__init__`); or an attribute every module has (`nn.Module`,
//! `PreTrainedModel`, `GenerationMixin`: a list in the rule, extended by
//! `extend-framework-attrs` in `[tool.patchgen.lint]`). Classes whose
//! attributes cannot be listed (a base outside transformers and the
//! framework, `__getattr__`, `setattr(self, <computed name>, …)`) are
//! skipped. The message names the nearest attribute the class has
//! (`block_type` for `layer_type`) or, when it has none and a sub-module of
//! the class defines the name, the path to it (`self.scorer.weights_proj`).
//!
//! This is `patchgen survey`'s `missing_attributes` (the same attribute
//! scan) against the one upstream being linted.
//!
//! ## Why is this bad?
//! Generation succeeds, ruff is silent (an attribute is not a name), and
//! the model fails with an `AttributeError` on its first forward — or
//! worse, a base class's attribute of the same name is read. Upstream
//! moves attributes between versions: transformers 5.16 renamed
//! `Qwen3_5DecoderLayer.layer_type` to `block_type` and moved
//! `DeepseekV4Indexer.weights_proj` into `self.scorer`.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3_5DecoderLayer.forward")
//! def qwen3_5_decoder_layer_forward(self, hidden_states, **kwargs):
//!     if self.layer_type == "linear_attention":  # `block_type` at 5.16
//!         ...
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3_5DecoderLayer.forward")
//! def qwen3_5_decoder_layer_forward(self, hidden_states, **kwargs):
//!     if self.block_type == "linear_attention":
//!         ...
//! ```
//!
//! ## Fix
//! Unsafe: when exactly one attribute is a candidate (a sub-module
//! defining the name, or one near name the replacement does not already
//! read: `skip_topk` beside `next_skip_topk` is another attribute), every
//! `self.X` read of the replacement is rewritten to it — not when the
//! candidate is only a part of the name (`skip_topk` of `next_skip_topk`:
//! a suggestion, no edit). Unsafe because a near name may mean
//! something else: read the upstream change first.

use std::collections::BTreeSet;

use patchgen_config::plan::PatchType;
use patchgen_core::survey::attrs::{self, Provided};
use patchgen_diagnostics::suggest::distance;
use patchgen_diagnostics::{Diagnostic, Severity};
use ruff_python_ast::StmtClassDef;

use crate::fix::{Applicability, TextEdit};
use crate::{LintContext, Rule, pyfacts};

pub const RULE: Rule = Rule {
    code: "PG106",
    name: "attribute-drift",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg106_attribute_drift.rs"),
    check,
    check_project: None,
};

/// Attributes every `nn.Module`, `PreTrainedModel` and `GenerationMixin`
/// has (their classes are outside the upstream module or not followed).
pub const FRAMEWORK_ATTRS: &[&str] = &[
    // torch.nn.Module
    "training",
    "_parameters",
    "_buffers",
    "_non_persistent_buffers_set",
    "_modules",
    "_forward_hooks",
    "_forward_pre_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_version",
    "dump_patches",
    "call_super_init",
    "forward",
    "register_buffer",
    "register_parameter",
    "add_module",
    "register_module",
    "get_submodule",
    "set_submodule",
    "get_parameter",
    "get_buffer",
    "get_extra_state",
    "set_extra_state",
    "apply",
    "cuda",
    "ipu",
    "xpu",
    "mtia",
    "cpu",
    "type",
    "float",
    "double",
    "half",
    "bfloat16",
    "to_empty",
    "to",
    "register_full_backward_pre_hook",
    "register_backward_hook",
    "register_full_backward_hook",
    "register_forward_pre_hook",
    "register_forward_hook",
    "state_dict",
    "register_state_dict_pre_hook",
    "register_state_dict_post_hook",
    "register_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook",
    "load_state_dict",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
    "train",
    "eval",
    "requires_grad_",
    "zero_grad",
    "share_memory",
    "extra_repr",
    "compile",
    "_apply",
    "_call_impl",
    "_wrapped_call_impl",
    "_get_name",
    "_load_from_state_dict",
    "_save_to_state_dict",
    "_named_members",
    // transformers.PreTrainedModel, GenerationMixin
    "config",
    "device",
    "dtype",
    "generation_config",
    "main_input_name",
    "base_model_prefix",
    "name_or_path",
    "gradient_checkpointing",
    "_gradient_checkpointing_func",
    "is_gradient_checkpointing",
    "post_init",
    "can_generate",
    "loss_function",
    "get_input_embeddings",
    "set_input_embeddings",
    "get_output_embeddings",
    "set_output_embeddings",
    "get_decoder",
    "set_decoder",
    "_is_hf_initialized",
    "warnings_issued",
    "prepare_inputs_for_generation",
    "generate",
    "_tied_weights_keys",
    "_no_split_modules",
    "_keep_in_fp32_modules",
    "_init_weights",
    "_initialize_weights",
    "init_weights",
    "tie_weights",
    "num_parameters",
    "hf_device_map",
    "model_tags",
    "_can_record_outputs",
    "_supports_sdpa",
    "_supports_flash_attn",
    "_supports_flex_attn",
    "_can_compile_fullgraph",
    "_supports_attention_backend",
    "_checkpoint_conversion_mapping",
    "all_tied_weights_keys",
];

/// Bases whose attributes the framework list stands for.
const FRAMEWORK_BASES: &[&str] = &[
    "nn.Module",
    "torch.nn.Module",
    "Module",
    "PreTrainedModel",
    "GenerationMixin",
    "GradientCheckpointingLayer",
    "object",
    "ABC",
];

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let extra: &[String] = &ctx.settings().extend_framework_attrs;
    let known = |n: &str| n.starts_with("__") || FRAMEWORK_ATTRS.contains(&n) || extra.iter().any(|e| e == n);
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for p in ctx.plan.patches.iter().rev() {
        if p.patch_type != PatchType::MethodOverride || p.replacement.is_none() || !seen.insert(&p.target) {
            continue;
        }
        let Some((class, _method)) = p.target.split_once('.') else { continue };
        let Some(method) = ctx.generated_def(&p.target) else { continue };
        let reads = attrs::of_function(method).reads;
        if reads.keys().all(|n| known(n)) {
            continue;
        }
        let Some(class_attrs) = ClassAttrs::of(ctx, class) else { continue };
        for (name, &at) in &reads {
            let name = name.clone();
            if known(&name) || class_attrs.provided.contains_key(&name) {
                continue;
            }
            // A name the body reads too is another attribute it uses, not
            // what this one became (`next_skip_topk` beside `skip_topk`).
            let candidates: Vec<String> =
                class_attrs.candidates(ctx, &name).into_iter().filter(|c| !reads.contains_key(c)).collect();
            let mut message = format!(
                "`{}` reads `self.{name}`, which `{class}` does not define at transformers {}",
                p.target, ctx.shared.upstream.upstream.version
            );
            if let Some(best) = candidates.first() {
                message.push_str(&format!("; did you mean `self.{best}`?"));
            }
            let help = match candidates.as_slice() {
                [] => format!(
                    "find what `self.{name}` became in the upstream `{class}` (`patchgen survey --from OLD --to NEW` lists attributes a bump removed), or set it in a patched `__init__`"
                ),
                [one] => format!("read `self.{one}` instead, if it is the same thing"),
                more => format!(
                    "read one of {} instead, whichever is the same thing",
                    more.iter().map(|c| format!("`self.{c}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            let fallback = Some(&p.registered_at);
            let mut d = RULE.diagnostic(message).help(help).target(p.target.clone());
            d = ctx.at_generated(d, at, fallback);
            // A name merely inside the missing one (`skip_topk` in
            // `next_skip_topk`) is a suggestion, never an edit: dropping a
            // prefix or suffix usually changes the meaning.
            let fix = match candidates.as_slice() {
                [one] if one.contains('.') || nearness(&name, one) != Some(Nearness::Inside) => {
                    rename_fix(ctx, &p.target, &name, one)
                }
                _ => None,
            };
            out.push(d.with_fix(fix));
        }
    }
    out
}

/// What a class provides, and the sub-modules it builds.
struct ClassAttrs {
    provided: Provided,
    /// `(attr, class module, class name)` of each `self.attr = Class(...)`.
    submodules: Vec<(String, String, String)>,
}

impl ClassAttrs {
    /// `class` of the patched module: its upstream lineage, and its
    /// generated form (the config's patched methods) with the bases the
    /// generated module defines. `None` when its attributes cannot be
    /// listed.
    fn of(ctx: &LintContext, class: &str) -> Option<ClassAttrs> {
        let upstream = ctx.upstream_class(class)?;
        let lineage = ctx.shared.lineage(&upstream);
        let unknown_base = lineage.unresolved.iter().any(|b| !FRAMEWORK_BASES.contains(&b.as_str()));
        if unknown_base || lineage.classes.iter().any(|c| attrs::is_dynamic(c.def())) {
            return None;
        }
        let mut provided = attrs::provided(&lineage);
        let mut submodules = Vec::new();
        for c in &lineage.classes {
            submodules.extend(attrs::submodules(c.def()).into_iter().map(|(a, k)| (a, c.module.clone(), k)));
        }
        if let Some(generated) = ctx.generated_class(class) {
            let local: Vec<&StmtClassDef> = pyfacts::local_lineage(ctx.generated.body(), generated);
            if local.iter().any(|c| attrs::is_dynamic(c)) {
                return None;
            }
            for c in local {
                attrs::provided_by(c, &ctx.generated, &mut provided);
                let module = ctx.plan.source_module.clone();
                submodules.extend(attrs::submodules(c).into_iter().map(|(a, k)| (a, module.clone(), k)));
            }
        }
        Some(ClassAttrs { provided, submodules })
    }

    /// What `self.<name>` may have become, best first: a near spelling
    /// the class has; else `sub.name` for each sub-module the class always
    /// builds whose class defines `name`; else a name with the same last
    /// word (`block_type` for `layer_type`).
    fn candidates(&self, ctx: &LintContext, name: &str) -> Vec<String> {
        let mut near: Vec<(Nearness, &str)> = self
            .provided
            .keys()
            .filter(|k| !k.starts_with("__") && !FRAMEWORK_ATTRS.contains(&k.as_str()))
            .filter_map(|k| nearness(name, k).map(|n| (n, k.as_str())))
            .collect();
        near.sort();
        let spelled: Vec<String> =
            near.iter().filter(|(n, _)| *n != Nearness::SameLastWord).map(|(_, k)| k.to_string()).collect();
        if !spelled.is_empty() {
            return spelled;
        }
        let mut nested: Vec<String> = Vec::new();
        for (attr, module, class) in &self.submodules {
            let Some(c) = ctx.shared.upstream_class(module, class) else { continue };
            if attrs::provided(&ctx.shared.lineage(&c)).contains_key(name) {
                let path = format!("{attr}.{name}");
                if !nested.contains(&path) {
                    nested.push(path);
                }
            }
        }
        if !nested.is_empty() {
            return nested;
        }
        near.into_iter().map(|(_, k)| k.to_string()).collect()
    }
}

/// How a known name is near a missing one, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Nearness {
    /// Within a quarter of the name's length in edits (the edits).
    Edits(usize),
    /// One inside the other, at least half its length (`skip_topk` in `next_skip_topk`).
    Inside,
    /// The same last word after another first one (`block_type` for `layer_type`).
    SameLastWord,
}

/// How near `known` is to the missing `name`, when it is near at all.
pub fn nearness(name: &str, known: &str) -> Option<Nearness> {
    let d = distance(name, known);
    let len = name.chars().count().max(known.chars().count());
    if d <= (len / 4).max(1) {
        return Some(Nearness::Edits(d));
    }
    let (short, long) = if name.len() <= known.len() { (name, known) } else { (known, name) };
    if short.len() >= 4 && 2 * short.len() >= long.len() && long.contains(short) {
        return Some(Nearness::Inside);
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (name.split('_').collect(), known.split('_').collect());
    let same_tail = a.len() == b.len()
        && a.len() >= 2
        && a.last().is_some_and(|t| t.len() >= 3)
        && a.last() == b.last()
        && a.iter().zip(&b).filter(|(x, y)| x != y).count() == 1;
    same_tail.then_some(Nearness::SameLastWord)
}

/// Every `self.<name>` read of the config function behind `target`'s
/// generated method rewritten to `self.<to>`.
fn rename_fix(ctx: &LintContext, target: &str, name: &str, to: &str) -> Option<crate::fix::Fix> {
    let origin = ctx.origin_named(target)?;
    let file = ctx.shared.pipeline.loader.parse_file(&origin.config_path).ok()?;
    let func = pyfacts::function_on_line(&file, origin.config_line)?;
    let edits: Vec<TextEdit> =
        attrs::loads_of(func, name).into_iter().map(|range| TextEdit { range, content: to.to_string() }).collect();
    if edits.is_empty() {
        return None;
    }
    let message = format!("Read `self.{to}` instead of `self.{name}`");
    Some(crate::fix::of_text(Applicability::Unsafe, message, &file.path, &file.text, &edits))
}

#[cfg(test)]
mod tests {
    use super::{Nearness, nearness};

    #[test]
    fn near_names() {
        assert_eq!(nearness("layer_type", "block_type"), Some(Nearness::SameLastWord));
        assert_eq!(nearness("next_skip_topk", "skip_topk"), Some(Nearness::Inside));
        assert_eq!(nearness("hidden_size", "hiden_size"), Some(Nearness::Edits(1)));
        assert!(Nearness::Edits(3) < Nearness::Inside && Nearness::Inside < Nearness::SameLastWord);
        assert!(nearness("layer_type", "layer_idx").is_none());
        // A shared last word ranks after a sub-module that has the very name (`scorer.weights_proj`).
        assert_eq!(nearness("weights_proj", "q_proj"), Some(Nearness::SameLastWord));
        assert!(nearness("mlp", "norm").is_none());
        assert!(nearness("route_tokens_to_experts", "experts").is_none());
    }
}
