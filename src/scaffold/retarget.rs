//! A template config's patches moved onto a new model, statically, by
//! *reuse* (protocol step 1.7): each patch whose target has a counterpart
//! in the new upstream module (the same class/function after the prefix
//! rename) is carried as an import of the template's replacement plus
//! `name_map={"<Template>": "<New>"}`; the rest are dropped and listed.
//! The protocol's exceptions are decided here from the upstream facts: no
//! full-head rotary kernel on partial rotary, no Liger MLP swap for an MLP
//! whose `__init__` takes `intermediate_size`, the `1 + weight` RMSNorm
//! variant where the new norm computes that.

use serde::Serialize;

use super::facts::ModelFacts;
use crate::codegen::text::{apply_name_map, split_leading_comments};
use crate::config::plan::{Patch, PatchPlan, PatchType};
use crate::survey::compare;
use crate::survey::modules::Version;
use crate::survey::signature::{self, Signature};

/// A template patch carried over.
#[derive(Clone, Debug, Serialize)]
pub struct Carried {
    pub patch_type: &'static str,
    pub target: String,
    pub template_target: String,
    /// Where the replacement is defined, and its name there.
    pub import_module: String,
    pub import_name: String,
    pub name_map: Vec<(String, String)>,
    pub description: Option<String>,
    /// The `# Patch:` header block (comment lines) above the replacement.
    pub header: Vec<String>,
    /// `TODO(patchgen new): …` lines (signature differences).
    pub todos: Vec<String>,
    /// Why this patch differs from the template's (an exception applied).
    pub notes: Vec<String>,
}

/// A template patch left out, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Dropped {
    pub template_target: String,
    pub target: String,
    pub reason: String,
    /// A protocol exception: written into the config as a comment.
    pub exception: bool,
}

/// The three exception decisions, as words (for the report and the
/// leave-one-out table).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Decisions {
    /// `replaced` | `upstream (partial rotary)` | `none`.
    pub rotary: String,
    /// `patched` | `not patched (intermediate_size)` | `none`.
    pub mlp: String,
    /// `standard` | `1+weight` | `none (…)`.
    pub norm: String,
}

/// A patch that replaces a `1 + weight` norm, from another project config.
#[derive(Clone, Debug)]
pub struct NormDonor {
    pub config_module: String,
    pub prefix: String,
    pub patch: Patch,
    /// The OpSlot variant its post-import block declares for `rms_norm`.
    pub opslot_variant: Option<String>,
}

/// Everything carried from the template.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Retargeted {
    pub carried: Vec<Carried>,
    pub dropped: Vec<Dropped>,
    pub decisions: Decisions,
    pub post_import_blocks: Vec<String>,
    /// `(module, names, alias)` of `add_import` calls.
    pub imports: Vec<(String, Option<Vec<String>>, Option<String>)>,
    /// (module, name) of helpers to `add_helper`.
    pub helpers: Vec<(String, String)>,
    pub drop_import_names: Vec<String>,
    pub exclude: Vec<String>,
    pub warnings: Vec<String>,
    /// Comments for the config: exceptions applied.
    pub exception_comments: Vec<String>,
}

/// Inputs of a retargeting.
pub struct Retarget<'a> {
    pub template: &'a PatchPlan,
    pub template_facts: &'a ModelFacts,
    pub new: &'a ModelFacts,
    pub version: &'a Version,
    /// Evidence of partial rotary / mrope_interleaved in the new configuration.
    pub partial_rotary: Option<String>,
    /// Where to find a `1 + weight` norm replacement (called only when needed).
    pub norm_donor: &'a dyn Fn() -> Option<NormDonor>,
}

fn type_name(t: PatchType) -> &'static str {
    match t {
        PatchType::ClassReplacement => "replace_class",
        PatchType::MethodOverride => "override_method",
        PatchType::FunctionReplacement => "replace_function",
        PatchType::AdditionalImport => "add_import",
        PatchType::InitModification => "modify_init",
    }
}

/// `{k: v}` of the template's patch, re-aimed at the new prefix, plus
/// `{template: new}`.
fn compose_name_map(patch: &Patch, from: &str, to: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in patch.name_map.iter().flatten() {
        out.push((k.clone(), v.replacen(from, to, 1)));
    }
    if from != to && !out.iter().any(|(k, _)| k == from) {
        out.push((from.to_string(), to.to_string()));
    }
    out
}

fn rename(target: &str, from: &str, to: &str) -> String {
    match target.strip_prefix(from) {
        Some(rest) => format!("{to}{rest}"),
        None => target.to_string(),
    }
}

/// The replacement's own parameter list (first function, or its class's `__init__`).
fn replacement_signature(source: &str, is_class: bool) -> Option<Signature> {
    let text = crate::pytext::dedent(source);
    let parsed = ruff_python_parser::parse_module(&text).ok()?;
    signature::of_replacement(&parsed.syntax().body, &text, is_class)
}

fn signature_todo(
    target: &str,
    upstream: &Signature,
    replacement: &Signature,
    name: &str,
) -> Option<String> {
    let d = compare::signatures(upstream, replacement, None)?;
    if d.removed.is_empty()
        && d.added.is_empty()
        && d.renamed.is_empty()
        && d.kind_changed.is_empty()
        && d.reordered.is_none()
    {
        return None;
    }
    let mut parts = Vec::new();
    if !d.removed.is_empty() {
        parts.push(format!("upstream only: {}", d.removed.join(", ")));
    }
    if !d.added.is_empty() {
        parts.push(format!("replacement only: {}", d.added.join(", ")));
    }
    for (a, b) in &d.renamed {
        parts.push(format!("upstream `{a}` is `{b}` in the replacement"));
    }
    for (n, a, b) in &d.kind_changed {
        parts.push(format!(
            "`{n}` is {} upstream, {} in the replacement",
            a.as_str(),
            b.as_str()
        ));
    }
    if d.reordered.is_some() {
        parts.push("positional order differs".into());
    }
    Some(format!(
        "TODO(patchgen new): upstream `{target}` takes {upstream}, the reused `{name}` declares {replacement} ({})",
        parts.join("; ")
    ))
}

/// The class part of a target (`A` of `A.forward`, or the class itself).
fn class_of(patch_type: PatchType, target: &str) -> Option<&str> {
    match patch_type {
        PatchType::ClassReplacement | PatchType::InitModification => Some(target),
        PatchType::MethodOverride => target.split_once('.').map(|(c, _)| c),
        _ => None,
    }
}

fn is_main(class: &str, prefix: &str, stem: &str) -> bool {
    class == format!("{prefix}{stem}") || class == format!("{prefix}Text{stem}")
}

impl Retarget<'_> {
    /// Does `target` (new name) exist in the new module?
    fn counterpart(&self, p: &Patch, target: &str, template_target: &str) -> bool {
        match p.patch_type {
            PatchType::FunctionReplacement => self.new.has_function(target),
            PatchType::ClassReplacement => self.new.has_class(target),
            PatchType::InitModification => false,
            PatchType::AdditionalImport => false,
            PatchType::MethodOverride => {
                let Some((class, method)) = target.split_once('.') else {
                    return false;
                };
                if !self.new.has_class(class) {
                    return false;
                }
                // A method the template injects (absent from its upstream) is
                // injected into the new class too.
                let (tclass, _) = template_target
                    .split_once('.')
                    .unwrap_or((template_target, ""));
                self.new.method(self.version, class, method).is_some()
                    || self
                        .template_facts
                        .method(self.version, tclass, method)
                        .is_none()
            }
        }
    }

    pub fn run(&self) -> Retargeted {
        let (from, to) = (
            self.template_facts.prefix.as_str(),
            self.new.prefix.as_str(),
        );
        let mut out = Retargeted::default();
        let mut rotary = "none".to_string();
        let mut mlp = "none".to_string();
        let mut norm = "none".to_string();
        let mut opslot_variant: Option<(String, String)> = None;
        for p in &self.template.patches {
            let target = rename(&p.target, from, to);
            let drop = |out: &mut Retargeted, reason: String, exception: bool| {
                out.dropped.push(Dropped {
                    template_target: p.target.clone(),
                    target: target.clone(),
                    reason,
                    exception,
                });
            };
            let Some(replacement) = &p.replacement else {
                drop(
                    &mut out,
                    "no replacement object to reuse (external or source-only patch)".into(),
                    false,
                );
                continue;
            };
            if p.patch_type == PatchType::InitModification {
                drop(&mut out, "modify_init is not carried".into(), false);
                continue;
            }
            if !self.counterpart(p, &target, &p.target) {
                drop(
                    &mut out,
                    format!("`{target}` does not exist in {}", self.new.module),
                    false,
                );
                continue;
            }
            let class = class_of(p.patch_type, &target);
            let mut notes = Vec::new();
            let mut patch = p.clone();
            let mut import_module = replacement.module.clone();
            let mut prefix_from = from.to_string();
            // Rotary.
            if p.patch_type == PatchType::FunctionReplacement && target == "apply_rotary_pos_emb" {
                if let Some(evidence) = &self.partial_rotary {
                    rotary = "upstream (partial rotary)".into();
                    let reason = format!(
                        "not replaced: {evidence}; the fused RoPE kernel rotates the full head_dim and gives NaN on partial rotary / mrope_interleaved"
                    );
                    out.exception_comments
                        .push(format!("apply_rotary_pos_emb is {reason}."));
                    drop(&mut out, reason, true);
                    continue;
                }
                rotary = "replaced".into();
            }
            // MLP.
            if let Some(c) = class.filter(|c| is_main(c, to, "MLP")) {
                if let Some(line) = self.new.init_takes_intermediate_size(self.version, c) {
                    mlp = "not patched (intermediate_size)".into();
                    let reason = format!(
                        "not swapped: `{c}.__init__` takes `intermediate_size` ({}:{line}), which LigerSwiGLUMLP rejects (shared experts reuse the MLP with another size)",
                        self.new.file.path.display()
                    );
                    out.exception_comments.push(format!("{c} is {reason}."));
                    drop(&mut out, reason, true);
                    continue;
                }
                mlp = "patched".into();
            }
            // Norm.
            if let Some(c) = class.filter(|c| is_main(c, to, "RMSNorm")) {
                let new_one_plus = self.new.norm_is_one_plus_weight(self.version, c);
                let tclass = class_of(p.patch_type, &p.target).unwrap_or_default();
                let template_one_plus = self
                    .template_facts
                    .norm_is_one_plus_weight(self.version, tclass)
                    .is_some();
                match (new_one_plus, template_one_plus) {
                    (Some(line), false) => {
                        let here = format!("{}:{line}", self.new.file.path.display());
                        match (self.norm_donor)() {
                            Some(donor) if donor.patch.replacement.is_some() => {
                                let r = donor.patch.replacement.as_ref().unwrap();
                                notes.push(format!(
                                    "`{c}` computes `1 + weight` ({here}): the `1 + weight` variant from {} is reused instead of {}'s standard norm",
                                    donor.config_module, self.template.config_module
                                ));
                                import_module = r.module.clone();
                                prefix_from = donor.prefix.clone();
                                if let Some(v) = &donor.opslot_variant {
                                    opslot_variant = Some(("standard".into(), v.clone()));
                                }
                                patch = donor.patch.clone();
                                norm = "1+weight".into();
                            }
                            _ => {
                                let reason = format!(
                                    "not replaced: `{c}` computes `1 + weight` ({here}) and the template's norm is the standard one; use the `1 + weight` variant (LigerRMSNormForQwen3Next) — no project config has one to reuse"
                                );
                                norm = "none (1+weight, no variant to reuse)".into();
                                out.exception_comments.push(format!("{c} is {reason}."));
                                drop(&mut out, reason, true);
                                continue;
                            }
                        }
                    }
                    (Some(_), true) => norm = "1+weight".into(),
                    (None, true) => {
                        let reason = format!(
                            "not replaced: the template's norm computes `1 + weight` and `{c}` does not"
                        );
                        norm = "none (standard norm, template has the 1+weight variant)".into();
                        out.exception_comments.push(format!("{c} is {reason}."));
                        drop(&mut out, reason, true);
                        continue;
                    }
                    (None, false) => norm = "standard".into(),
                }
            }
            let replacement = patch
                .replacement
                .clone()
                .unwrap_or_else(|| replacement.clone());
            let name_map = compose_name_map(&patch, &prefix_from, to);
            let is_class = p.patch_type == PatchType::ClassReplacement;
            let mut todos = Vec::new();
            if let (Some(up), Some(rep)) = (
                self.new.target_signature(self.version, &target, is_class),
                replacement_signature(&replacement.source, is_class),
            ) && let Some(todo) = signature_todo(&target, &up, &rep, &replacement.name)
            {
                todos.push(todo);
            }
            let (comments, _) = split_leading_comments(&replacement.source);
            let header: Vec<String> = comments.iter().map(|l| l.trim_end().to_string()).collect();
            let description = patch
                .description
                .as_ref()
                .map(|d| apply_name_map(d, Some(&name_map)));
            out.carried.push(Carried {
                patch_type: type_name(p.patch_type),
                target,
                template_target: p.target.clone(),
                import_module,
                import_name: replacement.name.clone(),
                name_map,
                description,
                header,
                todos,
                notes,
            });
        }
        let map = vec![(from.to_string(), to.to_string())];
        out.post_import_blocks = self
            .template
            .post_import_blocks
            .iter()
            .map(|b| {
                let mut b = apply_name_map(b, Some(&map));
                if let Some((old, new)) = &opslot_variant {
                    b = b.replace(
                        &format!("OpSlot(\"rms_norm\", \"{old}\")"),
                        &format!("OpSlot(\"rms_norm\", \"{new}\")"),
                    );
                }
                b
            })
            .collect();
        out.imports = self
            .template
            .additional_imports
            .iter()
            .map(|i| (i.module.clone(), i.names.clone(), i.alias.clone()))
            .collect();
        for h in &self.template.helpers {
            match &h.object {
                Some(o) => {
                    if o.source.contains(from) && from != to {
                        out.warnings.push(format!(
                            "helper `{}` (from {}) mentions `{from}`; add_helper has no name_map: check it",
                            o.name, o.module
                        ));
                    }
                    out.helpers.push((o.module.clone(), o.name.clone()));
                }
                None => out
                    .warnings
                    .push("a template helper has no source; not carried".into()),
            }
        }
        if !self.template.positioned_helpers.is_empty() {
            out.warnings.push(format!(
                "{} positioned helper(s) (add_helper_after) of the template are not carried",
                self.template.positioned_helpers.len()
            ));
        }
        out.drop_import_names = self.template.drop_imported_names.iter().cloned().collect();
        out.exclude = self
            .template
            .exclude
            .iter()
            .map(|e| rename(e, from, to))
            .filter(|e| self.new.has_class(e) || self.new.has_function(e))
            .collect();
        out.decisions = Decisions { rotary, mlp, norm };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_and_name_maps() {
        assert_eq!(
            rename("Qwen3RMSNorm.forward", "Qwen3", "Mistral"),
            "MistralRMSNorm.forward"
        );
        assert_eq!(
            rename("apply_rotary_pos_emb", "Qwen3", "Mistral"),
            "apply_rotary_pos_emb"
        );
        let p = Patch {
            patch_type: PatchType::MethodOverride,
            target: "Qwen3_5MoeX.forward".into(),
            replacement: None,
            source_module: None,
            description: None,
            replacement_source: None,
            name_map: Some(vec![("Qwen3_5".into(), "Qwen3_5Moe".into())]),
            registered_at: crate::config::plan::Loc {
                path: "c.py".into(),
                line: 1,
            },
        };
        assert_eq!(
            compose_name_map(&p, "Qwen3_5Moe", "Glm"),
            [
                ("Qwen3_5".to_string(), "Glm".to_string()),
                ("Qwen3_5Moe".to_string(), "Glm".to_string())
            ]
        );
    }

    #[test]
    fn signature_todos_name_the_parameters() {
        let up = signature_of("def f(self, x, cache=None, **kwargs): pass");
        let rep = signature_of("def g(self, x, **kwargs): pass");
        let todo = signature_todo("A.forward", &up, &rep, "g").unwrap();
        assert!(todo.contains("upstream only: cache"), "{todo}");
        assert!(signature_todo("A.forward", &up, &up, "g").is_none());
    }

    fn signature_of(src: &str) -> Signature {
        replacement_signature(src, false).unwrap()
    }
}
