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
use patchgen_config::plan::{Patch, PatchPlan, PatchType};
use patchgen_core::codegen::text::{apply_name_map, split_leading_comments, strip_patch_decorators};
use patchgen_core::survey::compare;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::signature::{self, Signature};
use patchgen_python::semantic::{self, facts::Loads};

/// A template patch carried over.
#[derive(Clone, Debug, Serialize)]
pub struct Carried {
    #[serde(serialize_with = "dsl_method")]
    pub patch_type: PatchType,
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
    /// The replacement's source under the new names (to find what it uses).
    #[serde(skip)]
    pub source: String,
    /// Where the replacement is defined: file and 1-based line range.
    #[serde(skip)]
    pub defined_at: Option<(std::path::PathBuf, usize, usize)>,
    /// Written into the config instead of imported (an inherited PG301
    /// fixed in a copy, `super::pg301_copy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy: Option<super::pg301_copy::Copied>,
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

/// The three exception decisions (serialised as the words the report and
/// the leave-one-out table print).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Decisions {
    pub rotary: Rotary,
    pub mlp: Mlp,
    pub norm: Norm,
}

/// What the scaffold did with the rotary embedding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rotary {
    /// Nothing to decide (no `apply_rotary_pos_emb` patch, none added).
    #[default]
    None,
    /// The fused RoPE replaces the upstream function.
    Replaced,
    /// Kept upstream: the model rotates only part of the head.
    UpstreamPartial,
    /// Decided to replace, then pruned with the patch.
    Pruned,
}

/// What the scaffold did with the MLP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mlp {
    #[default]
    None,
    Patched,
    /// Not swapped for the fused MLP: the model's MLP takes an `intermediate_size`.
    NotPatchedIntermediateSize,
    /// The model's MLP class is its MoE block.
    MoeBlock,
    Pruned,
}

/// What the scaffold did with the RMSNorm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Norm {
    #[default]
    None,
    Standard,
    /// The `1 + weight` variant.
    OnePlusWeight,
    /// `1 + weight` upstream, and no project variant to reuse.
    OnePlusNoVariant,
    /// A standard norm while the template's patch is the `1 + weight` variant.
    StandardTemplateOnePlus,
    Pruned,
}

impl Rotary {
    pub fn as_str(self) -> &'static str {
        match self {
            Rotary::None => "none",
            Rotary::Replaced => "replaced",
            Rotary::UpstreamPartial => "upstream (partial rotary)",
            Rotary::Pruned => "none (pruned)",
        }
    }
}

impl Mlp {
    pub fn as_str(self) -> &'static str {
        match self {
            Mlp::None => "none",
            Mlp::Patched => "patched",
            Mlp::NotPatchedIntermediateSize => "not patched (intermediate_size)",
            Mlp::MoeBlock => "none (the MLP class is the MoE block)",
            Mlp::Pruned => "none (pruned)",
        }
    }
}

impl Norm {
    pub fn as_str(self) -> &'static str {
        match self {
            Norm::None => "none",
            Norm::Standard => "standard",
            Norm::OnePlusWeight => "1+weight",
            Norm::OnePlusNoVariant => "none (1+weight, no variant to reuse)",
            Norm::StandardTemplateOnePlus => "none (standard norm, template has the 1+weight variant)",
            Norm::Pruned => "none (pruned)",
        }
    }

    /// No norm patch written (whatever the reason).
    pub fn is_none(self) -> bool {
        !matches!(self, Norm::Standard | Norm::OnePlusWeight)
    }
}

macro_rules! words {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
words!(Rotary, Mlp, Norm);

/// A patch that replaces a `1 + weight` norm, from another project config.
#[derive(Clone, Debug)]
pub struct NormDonor {
    pub config_module: String,
    pub prefix: String,
    pub patch: Patch,
    /// The OpSlot variant its post-import block declares for `rms_norm`.
    pub opslot_variant: Option<String>,
    /// That declaration's line and the line importing `OpSlot`, as written.
    pub opslot_lines: Option<(String, String)>,
}

/// A template helper: reused by import, or copied under the new names.
#[derive(Clone, Debug, Serialize)]
pub enum Helper {
    Import { module: String, name: String },
    Copy { name: String, source: String },
}

/// Everything carried from the template.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Retargeted {
    pub carried: Vec<Carried>,
    pub dropped: Vec<Dropped>,
    pub decisions: Decisions,
    pub post_import_blocks: Vec<String>,
    /// `add_import` calls.
    #[serde(skip)]
    pub imports: Vec<patchgen_config::plan::ImportSpec>,
    /// Helpers, in the template's order.
    pub helpers: Vec<Helper>,
    /// Per helper (same order): its name and source under the new names,
    /// and whether something of the template used it (see `prune_helpers`).
    #[serde(skip)]
    helper_uses: Vec<HelperUse>,
    pub drop_import_names: Vec<String>,
    pub exclude: Vec<String>,
    pub warnings: Vec<String>,
    /// Comments for the config: exceptions applied.
    pub exception_comments: Vec<String>,
    /// Upstream definitions the project's ruff rejects, overridden verbatim
    /// with `# noqa` (see `ruff_findings`).
    pub upstream_overrides: Vec<super::ruff_findings::UpstreamOverride>,
    #[serde(skip)]
    post_import_blocks_extra: Vec<String>,
    /// The RoPE guard over the new model's own code, for when pruning drops
    /// the carried rotary reuse (the slot is declared by the template).
    #[serde(skip)]
    rotary_fallback: Option<super::ruff_findings::UpstreamOverride>,
}

/// What `prune_helpers` knows of a carried helper.
#[derive(Clone, Debug, Default)]
struct HelperUse {
    /// The name the generated module defines (a copied helper renamed).
    name: String,
    /// Its source under the new names.
    source: String,
    /// A template patch or helper used it: once none of its users is
    /// carried, it goes. A helper nothing of the template uses (read from
    /// outside the generated module) always stays.
    had_users: bool,
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
    /// The project's OpSlot declarations (for the kernel guards).
    pub slots: &'a super::kernels::ProjectSlots,
    /// The rms_norm variant the project declares for a `1 + weight` norm.
    pub one_plus_variant: &'a dyn Fn() -> Option<String>,
}

/// The exception decisions made while carrying, and the `rms_norm` OpSlot
/// variant the post-import blocks re-aim (`(old, new)`).
#[derive(Default)]
struct Deciding {
    rotary: Rotary,
    mlp: Mlp,
    norm: Norm,
    opslot_variant: Option<(String, String)>,
}

/// Why a template patch is not carried.
enum Left {
    /// Nothing to reuse, or no counterpart.
    Dropped(String),
    /// A protocol exception, also commented in the config as
    /// `<subject> is <reason>.`.
    Exception { subject: String, reason: String },
}

/// What a carried patch reuses: the template's patch, or a project
/// config's `1 + weight` norm in its place.
struct Reused {
    patch: Patch,
    import_module: String,
    /// The prefix the reused patch's names are spelled with.
    prefix_from: String,
    notes: Vec<String>,
}

/// A patch type as the config's DSL method that registers it (`replace_class`).
fn dsl_method<S: serde::Serializer>(t: &PatchType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.dsl_method())
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
    let text = patchgen_python::pytext::dedent(source);
    let parsed = ruff_python_parser::parse_module(&text).ok()?;
    signature::of_replacement(&parsed.syntax().body, &text, is_class)
}

fn signature_todo(target: &str, upstream: &Signature, replacement: &Signature, name: &str) -> Option<String> {
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
        parts.push(format!("`{n}` is {} upstream, {} in the replacement", a.as_str(), b.as_str()));
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
                let (tclass, _) = template_target.split_once('.').unwrap_or((template_target, ""));
                self.new.method(self.version, class, method).is_some()
                    || self.template_facts.method(self.version, tclass, method).is_none()
            }
        }
    }

    pub fn run(&self) -> Retargeted {
        let mut out = Retargeted::default();
        let mut d = Deciding::default();
        self.carry_patches(&mut out, &mut d);
        let extra_block = self.one_plus_norm_block(&mut out, &mut d);
        self.unhook_moe_blocks(&mut out, &mut d);
        let slot_lines = self.kernel_guards(&mut out, &mut d);
        if let Some(block) = self.slot_block(&slot_lines, extra_block.as_ref()) {
            out.post_import_blocks_extra.push(block);
        }
        self.post_import_blocks(&mut out, &d, extra_block);
        self.carry_imports(&mut out);
        self.carry_helpers(&mut out);
        let (from, to) = (self.template_facts.prefix.as_str(), self.new.prefix.as_str());
        out.drop_import_names = self.template.drop_imported_names.iter().cloned().collect();
        out.exclude = self
            .template
            .exclude
            .iter()
            .map(|e| rename(e, from, to))
            .filter(|e| self.new.has_class(e) || self.new.has_function(e))
            .collect();
        out.decisions = Decisions { rotary: d.rotary, mlp: d.mlp, norm: d.norm };
        out.prune_helpers();
        out
    }

    /// Each template patch carried, or dropped with why.
    fn carry_patches(&self, out: &mut Retargeted, d: &mut Deciding) {
        let (from, to) = (self.template_facts.prefix.as_str(), self.new.prefix.as_str());
        for p in &self.template.patches {
            let target = rename(&p.target, from, to);
            let (reason, exception) = match self.carry(p, &target, d) {
                Ok(carried) => {
                    out.carried.push(carried);
                    continue;
                }
                Err(Left::Dropped(reason)) => (reason, false),
                Err(Left::Exception { subject, reason }) => {
                    out.exception_comments.push(format!("{subject} is {reason}."));
                    (reason, true)
                }
            };
            out.dropped.push(Dropped { template_target: p.target.clone(), target, reason, exception });
        }
    }

    /// One template patch, as `target` in the new module.
    fn carry(&self, p: &Patch, target: &str, d: &mut Deciding) -> Result<Carried, Left> {
        let (from, to) = (self.template_facts.prefix.as_str(), self.new.prefix.as_str());
        let Some(replacement) = &p.replacement else {
            return Err(Left::Dropped("no replacement object to reuse (external or source-only patch)".into()));
        };
        if p.patch_type == PatchType::InitModification {
            return Err(Left::Dropped("modify_init is not carried".into()));
        }
        if !self.counterpart(p, target, &p.target) {
            return Err(Left::Dropped(format!("`{target}` does not exist in {}", self.new.module)));
        }
        let class = class_of(p.patch_type, target);
        if p.patch_type == PatchType::FunctionReplacement && target == "apply_rotary_pos_emb" {
            self.decide_rotary(target, d)?;
        }
        if let Some(c) = class.filter(|c| is_main(c, to, "MLP")) {
            self.decide_mlp(p, c, d)?;
        }
        let mut reused = Reused {
            patch: p.clone(),
            import_module: replacement.module.clone(),
            prefix_from: from.to_string(),
            notes: Vec::new(),
        };
        if let Some(c) = class.filter(|c| is_main(c, to, "RMSNorm")) {
            self.decide_norm(p, c, d, &mut reused)?;
        }
        Ok(self.carried(p, target, replacement, reused))
    }

    /// The fused RoPE kernel rotates the full head: kept upstream on
    /// partial rotary.
    fn decide_rotary(&self, target: &str, d: &mut Deciding) -> Result<(), Left> {
        if let Some(evidence) = &self.partial_rotary {
            d.rotary = Rotary::UpstreamPartial;
            let reason = format!(
                "not replaced: {evidence}; the fused RoPE kernel rotates the full head_dim and gives NaN on partial rotary / mrope_interleaved"
            );
            return Err(Left::Exception { subject: target.to_string(), reason });
        }
        d.rotary = Rotary::Replaced;
        Ok(())
    }

    /// The main MLP `c`: no dense MLP's patch on an MoE block, no fused MLP
    /// swap for an MLP built with an `intermediate_size`.
    fn decide_mlp(&self, p: &Patch, c: &str, d: &mut Deciding) -> Result<(), Left> {
        // The same name, another role: an MLP class that is the MoE
        // block (gpt_oss) gets no dense MLP's patch.
        let tclass = class_of(p.patch_type, &p.target).unwrap_or_default();
        if self.is_moe_block(self.new, c) && !self.is_moe_block(self.template_facts, tclass) {
            d.mlp = Mlp::MoeBlock;
            let reason = format!(
                "not carried: `{c}` is the MoE block (its `__init__` builds experts/a router), the template's `{tclass}` a dense MLP; the MoE block needs its own replacement (see the MoE needs)"
            );
            return Err(Left::Exception { subject: c.to_string(), reason });
        }
        // Only a class swap constructs the replacement with the
        // upstream's arguments; a `forward` override keeps `__init__`.
        let swap = p.patch_type == PatchType::ClassReplacement;
        if swap && let Some(line) = self.new.init_takes_intermediate_size(self.version, c) {
            d.mlp = Mlp::NotPatchedIntermediateSize;
            let reason = format!(
                "not swapped: `{c}.__init__` takes `intermediate_size` ({}:{line}), which LigerSwiGLUMLP rejects (shared experts reuse the MLP with another size)",
                self.new.file.path.display()
            );
            return Err(Left::Exception { subject: c.to_string(), reason });
        }
        d.mlp = Mlp::Patched;
        Ok(())
    }

    /// The main RMSNorm `c`: the template's norm when both compute the
    /// same, a project config's `1 + weight` variant (into `reused`) when
    /// only the new one computes `1 + weight`, else no norm patch.
    fn decide_norm(&self, p: &Patch, c: &str, d: &mut Deciding, reused: &mut Reused) -> Result<(), Left> {
        let new_one_plus = self.new.norm_is_one_plus_weight(self.version, c);
        let tclass = class_of(p.patch_type, &p.target).unwrap_or_default();
        let template_one_plus = self.template_facts.norm_is_one_plus_weight(self.version, tclass).is_some();
        match (new_one_plus, template_one_plus) {
            (Some(line), false) => {
                let here = format!("{}:{line}", self.new.file.path.display());
                match (self.norm_donor)() {
                    Some(donor) if donor.patch.replacement.is_some() => {
                        let r = donor.patch.replacement.as_ref().unwrap();
                        reused.notes.push(format!(
                            "`{c}` computes `1 + weight` ({here}): the `1 + weight` variant from {} is reused instead of {}'s standard norm",
                            donor.config_module, self.template.config_module
                        ));
                        reused.import_module = r.module.clone();
                        reused.prefix_from = donor.prefix.clone();
                        if let Some(v) = &donor.opslot_variant {
                            d.opslot_variant = Some(("standard".into(), v.clone()));
                        }
                        reused.patch = donor.patch.clone();
                        d.norm = Norm::OnePlusWeight;
                    }
                    _ => {
                        let reason = format!(
                            "not replaced: `{c}` computes `1 + weight` ({here}) and the template's norm is the standard one; use the `1 + weight` variant (LigerRMSNormForQwen3Next) — no project config has one to reuse"
                        );
                        d.norm = Norm::OnePlusNoVariant;
                        return Err(Left::Exception { subject: c.to_string(), reason });
                    }
                }
            }
            (Some(_), true) => d.norm = Norm::OnePlusWeight,
            (None, true) => {
                let reason = format!("not replaced: the template's norm computes `1 + weight` and `{c}` does not");
                d.norm = Norm::StandardTemplateOnePlus;
                return Err(Left::Exception { subject: c.to_string(), reason });
            }
            (None, false) => d.norm = Norm::Standard,
        }
        Ok(())
    }

    /// The carried patch: the reused replacement under the new names, with
    /// a TODO where its signature and the upstream's differ.
    fn carried(
        &self,
        p: &Patch,
        target: &str,
        replacement: &patchgen_config::plan::SourceObject,
        reused: Reused,
    ) -> Carried {
        let Reused { patch, import_module, prefix_from, notes } = reused;
        let replacement = patch.replacement.clone().unwrap_or_else(|| replacement.clone());
        let name_map = compose_name_map(&patch, &prefix_from, &self.new.prefix);
        let is_class = p.patch_type == PatchType::ClassReplacement;
        let mut todos = Vec::new();
        if let (Some(up), Some(rep)) = (
            self.new.target_signature(self.version, target, is_class),
            replacement_signature(&replacement.source, is_class),
        ) && let Some(todo) = signature_todo(target, &up, &rep, &replacement.name)
        {
            todos.push(todo);
        }
        let (comments, _) = split_leading_comments(&replacement.source);
        let header: Vec<String> = comments.iter().map(|l| l.trim_end().to_string()).collect();
        let description = patch.description.as_ref().map(|d| apply_name_map(d, Some(&name_map)));
        let source = apply_name_map(&replacement.source, Some(&name_map));
        let defined_at = defined_range(&replacement);
        Carried {
            defined_at,
            source,
            patch_type: p.patch_type,
            target: target.to_string(),
            template_target: p.target.clone(),
            import_module,
            import_name: replacement.name.clone(),
            name_map,
            description,
            header,
            todos,
            notes,
            copy: None,
        }
    }

    /// No norm patch carried and the new norm computes `1 + weight`: a
    /// project config's (`add_one_plus_norm`). Its OpSlot declaration block
    /// when the template declares no `rms_norm` slot to re-aim.
    fn one_plus_norm_block(&self, out: &mut Retargeted, d: &mut Deciding) -> Option<String> {
        if d.norm != Norm::None {
            return None;
        }
        let (block, variant) = self.add_one_plus_norm(out, &mut d.norm)?;
        // The template declares a standard slot nothing uses now: re-aim it.
        if self.template.post_import_blocks.iter().any(|b| b.contains("OpSlot(\"rms_norm\",")) {
            d.opslot_variant = Some(("standard".into(), variant));
            None
        } else {
            Some(block)
        }
    }

    /// An MoE block behind a hub kernel: the upstream class without that
    /// decorator (`hub`), so the experts stay the MoE path.
    fn unhook_moe_blocks(&self, out: &mut Retargeted, d: &mut Deciding) {
        let to = self.new.prefix.as_str();
        let targeted: Vec<String> = out.carried.iter().map(|c| c.target.clone()).collect();
        let (unhooked, kept) = super::hub::undecorated_moe_blocks(self.new, &targeted);
        for o in unhooked {
            if is_main(&o.target, to, "MLP") {
                d.mlp = Mlp::Patched;
            }
            out.exception_comments.push(format!("{}: {}.", o.target, o.todo.trim_start_matches("patchgen new: ")));
            out.upstream_overrides.push(o);
        }
        out.warnings.extend(kept);
    }

    /// Whether the template's post-import blocks declare the OpSlot `var`.
    fn declares_slot(&self, var: &str) -> bool {
        self.template.post_import_blocks.iter().any(|b| b.contains(&format!("{var} = OpSlot(")))
    }

    /// No kernel patch carried: the project's OpSlot guard over the new
    /// model's own code (`kernels`), where the formulation fits. Returns
    /// the slot declarations the template lacks.
    fn kernel_guards(&self, out: &mut Retargeted, d: &mut Deciding) -> Vec<String> {
        let mut slot_lines: Vec<String> = Vec::new();
        if d.norm.is_none() {
            self.norm_guard(out, d, &mut slot_lines);
        }
        if d.rotary == Rotary::Replaced
            && let Ok((o, decl)) = super::kernels::rotary_guard(self.new, self.slots)
            && self.declares_slot(&decl.var)
        {
            out.rotary_fallback = Some(o);
        }
        if d.rotary == Rotary::None && self.partial_rotary.is_none() && self.new.has_function("apply_rotary_pos_emb") {
            match super::kernels::rotary_guard(self.new, self.slots) {
                Ok((o, decl)) => {
                    d.rotary = Rotary::Replaced;
                    if !self.declares_slot(&decl.var) {
                        slot_lines.push(decl.line.clone());
                    }
                    out.upstream_overrides.push(o);
                }
                Err(why) => out.warnings.push(format!("no RoPE patch: {why}")),
            }
        }
        slot_lines
    }

    /// The norm guard, standard or `1 + weight` as the new norm computes.
    fn norm_guard(&self, out: &mut Retargeted, d: &mut Deciding, slot_lines: &mut Vec<String>) {
        let to = self.new.prefix.as_str();
        let class = [format!("{to}RMSNorm"), format!("{to}TextRMSNorm")].into_iter().find(|c| self.new.has_class(c));
        let Some(class) = class else { return };
        let one_plus = self.new.norm_is_one_plus_weight(self.version, &class).is_some();
        let v = if one_plus { (self.one_plus_variant)() } else { None };
        match super::kernels::norm_guard(self.new, self.version, &class, self.slots, v.as_deref()) {
            Ok((o, decl)) => {
                d.norm = if one_plus { Norm::OnePlusWeight } else { Norm::Standard };
                if self.declares_slot(&decl.var) {
                    if decl.variant != "standard" {
                        d.opslot_variant = Some(("standard".into(), decl.variant.clone()));
                    }
                } else {
                    slot_lines.push(decl.line.clone());
                }
                out.upstream_overrides.push(o);
            }
            Err(why) => out.warnings.push(format!("no norm patch: {why}")),
        }
    }

    /// The block declaring the OpSlots the kernel guards call (with the
    /// `OpSlot` import unless a block has it).
    fn slot_block(&self, slot_lines: &[String], extra_block: Option<&String>) -> Option<String> {
        if slot_lines.is_empty() {
            return None;
        }
        let has_import = self.template.post_import_blocks.iter().any(|b| b.contains("import OpSlot"))
            || extra_block.is_some_and(|b| b.contains("import OpSlot"));
        let mut block = String::from("# patchgen new: the OpSlots the kernel guards call.\n");
        if !has_import && let Some(i) = &self.slots.import_line {
            block.push_str(i);
            block.push('\n');
        }
        block.push_str(&slot_lines.join("\n"));
        Some(block)
    }

    /// The template's post-import blocks under the new names (its
    /// `rms_norm` slot re-aimed), then the blocks added here.
    fn post_import_blocks(&self, out: &mut Retargeted, d: &Deciding, extra_block: Option<String>) {
        let map = vec![(self.template_facts.prefix.clone(), self.new.prefix.clone())];
        out.post_import_blocks = self
            .template
            .post_import_blocks
            .iter()
            .map(|b| {
                let mut b = apply_name_map(b, Some(&map));
                if let Some((old, new)) = &d.opslot_variant {
                    b = b.replace(
                        &format!("OpSlot(\"rms_norm\", \"{old}\")"),
                        &format!("OpSlot(\"rms_norm\", \"{new}\")"),
                    );
                }
                b
            })
            .collect();
        out.post_import_blocks.extend(extra_block);
        let guards = std::mem::take(&mut out.post_import_blocks_extra);
        out.post_import_blocks.extend(guards);
    }

    /// The template's `add_import` calls; imported names spelled with the
    /// template's prefix are bound under the new prefix too (reused bodies
    /// refer to them so).
    fn carry_imports(&self, out: &mut Retargeted) {
        let (from, to) = (self.template_facts.prefix.as_str(), self.new.prefix.as_str());
        let map = vec![(from.to_string(), to.to_string())];
        out.imports = self.template.additional_imports.clone();
        let aliases: Vec<String> = out
            .imports
            .iter()
            .flat_map(|i| i.names.iter().flatten())
            .filter(|n| from != to && n.contains(from))
            .map(|n| format!("{} = {n}", apply_name_map(n, Some(&map))))
            .collect();
        if !aliases.is_empty() {
            out.warnings.push(format!(
                "the template imports model-specific names ({}); the scaffold binds them under the new names: give the model its own",
                aliases.join("; ")
            ));
            out.post_import_blocks.push(format!(
                "# patchgen new: the template's imported classes, under this model's names.\n{}",
                aliases.join("\n")
            ));
        }
    }

    /// The template's helpers: imported, or copied under the new names
    /// when written for the template's; with what used each (for
    /// `prune_helpers`).
    fn carry_helpers(&self, out: &mut Retargeted) {
        let (from, to) = (self.template_facts.prefix.as_str(), self.new.prefix.as_str());
        let map = vec![(from.to_string(), to.to_string())];
        // What used each helper in the template: its patches' replacements
        // (under their name maps, as generated) and its other helpers.
        let template_users: Vec<Vec<String>> = self
            .template
            .patches
            .iter()
            .filter_map(|p| {
                p.replacement.as_ref().map(|r| loaded_names(&apply_name_map(&r.source, p.name_map.as_deref())))
            })
            .collect();
        let template_helpers: Vec<&patchgen_config::plan::SourceObject> =
            self.template.helpers.iter().filter_map(|h| h.object.as_ref()).collect();
        for h in &self.template.helpers {
            let Some(o) = &h.object else {
                out.warnings.push("a template helper has no source; not carried".into());
                continue;
            };
            let had_users = template_users.iter().any(|s| s.contains(&o.name))
                || template_helpers.iter().any(|t| t.name != o.name && loaded_names(&t.source).contains(&o.name));
            let source =
                apply_name_map(&patchgen_python::pytext::dedent(&strip_patch_decorators(&o.source)), Some(&map));
            out.helper_uses.push(HelperUse {
                name: apply_name_map(&o.name, Some(&map)),
                source: source.clone(),
                had_users,
            });
            // add_helper has no name_map: a helper written for the
            // template's names is copied, renamed (a helper is small; a
            // reused one would define the template's names).
            if from != to && o.source.contains(from) {
                out.helpers.push(Helper::Copy { name: o.name.clone(), source });
            } else {
                out.helpers.push(Helper::Import { module: o.module.clone(), name: o.name.clone() });
            }
        }
        if !self.template.positioned_helpers.is_empty() {
            out.warnings.push(format!(
                "{} positioned helper(s) (add_helper_after) of the template are not carried",
                self.template.positioned_helpers.len()
            ));
        }
    }
}

impl Retarget<'_> {
    /// Whether `class`'s `__init__` builds experts or a router.
    fn is_moe_block(&self, facts: &ModelFacts, class: &str) -> bool {
        facts.method_text(self.version, class, "__init__").is_some_and(|t| {
            let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
            t.contains("self.experts=") || t.contains("self.router=")
        })
    }

    /// The template leaves the norm alone but the new one computes
    /// `1 + weight`: reuse a project config's `1 + weight` norm patch, with
    /// the OpSlot declaration it relies on. Returns that declaration block.
    fn add_one_plus_norm(&self, out: &mut Retargeted, norm: &mut Norm) -> Option<(String, String)> {
        let to = self.new.prefix.as_str();
        let class = [format!("{to}RMSNorm"), format!("{to}TextRMSNorm")]
            .into_iter()
            .find(|c| self.new.has_class(c) && self.new.norm_is_one_plus_weight(self.version, c).is_some())?;
        let donor = (self.norm_donor)()?;
        let replacement = donor.patch.replacement.clone()?;
        let variant = donor.opslot_variant.clone()?;
        let (import_line, decl_line) = donor.opslot_lines.clone()?;
        let name_map = compose_name_map(&donor.patch, &donor.prefix, to);
        let target = format!("{class}.forward");
        *norm = Norm::OnePlusWeight;
        let source = apply_name_map(&replacement.source, Some(&name_map));
        let (comments, _) = split_leading_comments(&replacement.source);
        out.carried.push(Carried {
            defined_at: defined_range(&replacement),
            source,
            patch_type: PatchType::MethodOverride,
            target: target.clone(),
            template_target: donor.patch.target.clone(),
            import_module: replacement.module.clone(),
            import_name: replacement.name.clone(),
            name_map,
            description: Some(format!("OpSlot guard for the fused `1 + weight` RMSNorm ({variant})")),
            header: comments.iter().map(|l| l.trim_end().to_string()).collect(),
            todos: Vec::new(),
            notes: vec![format!(
                "`{class}` computes `1 + weight`: the `1 + weight` norm of {} is reused (the template {} leaves its norm alone)",
                donor.config_module, self.template.config_module
            )],
            copy: None,
        });
        let has_opslot = self.template.post_import_blocks.iter().any(|b| b.contains("import OpSlot"));
        let mut block = String::from("# patchgen new: the `1 + weight` RMSNorm slot the reused norm patch calls.\n");
        if !has_opslot {
            block.push_str(&import_line);
            block.push('\n');
        }
        block.push_str(&decl_line);
        Some((block, variant))
    }
}

/// The file and line range a replacement's source spans.
fn defined_range(r: &patchgen_config::plan::SourceObject) -> Option<(std::path::PathBuf, usize, usize)> {
    let lines = r.source.lines().count();
    (r.defined_at.line > 0).then(|| (r.defined_at.path.clone(), r.defined_at.line, r.defined_at.line + lines))
}

/// Whether `word` occurs in `text` as a whole identifier.
fn uses_name(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(is_ident)
            && !text[i + word.len()..].chars().next().is_some_and(is_ident)
    })
}

/// The names a piece of Python source reads (`Name` loads: calls,
/// attribute bases, arguments; not comments or strings). Text that does
/// not parse falls back to its identifiers.
fn loaded_names(source: &str) -> Vec<String> {
    let text = patchgen_python::pytext::dedent(source);
    match ruff_python_parser::parse_module(&text) {
        Ok(parsed) => semantic::facts::loaded_names(&parsed.syntax().body, Loads::Anywhere),
        Err(_) => {
            let mut out: Vec<String> = Vec::new();
            for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
                if !out.iter().any(|x| x == w) {
                    out.push(w.to_string());
                }
            }
            out
        }
    }
}

/// Where the template's upstream module gets `name` from: the absolute
/// module of an import binding it, or the module itself when it defines it.
fn template_binding(template: &ModelFacts, name: &str) -> Option<String> {
    use ruff_python_ast::Stmt;
    for stmt in template.file.body() {
        if let Stmt::ImportFrom(i) = stmt
            && i.names
                .iter()
                .any(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str() == name && a.name.id.as_str() == name)
        {
            let from = i.module.as_ref().map(|m| m.id.to_string());
            return if i.level > 0 {
                patchgen_core::codegen::imports::absolute_module(&template.module, from.as_deref(), i.level)
            } else {
                from
            };
        }
    }
    (template.has_class(name) || template.has_function(name)).then(|| template.module.clone())
}

impl Retargeted {
    /// Drop the helpers the template's patches or helpers used when none
    /// of those users is carried any more (pruned, or without counterpart),
    /// to a fixpoint: a dropped helper's own helpers may go next. A copied
    /// helper names the new model's classes (`_Llama4FakeForPosID` calls
    /// `Llama4Model`), which the new module may lack (lint PG103). Users
    /// are what the generated module holds: carried replacements, kept
    /// helpers, post-import blocks, the scaffold's own overrides. `true`
    /// when a helper was dropped.
    pub fn prune_helpers(&mut self) -> bool {
        let mut changed = false;
        let others: Vec<Vec<String>> = self
            .carried
            .iter()
            .map(|c| c.source.as_str())
            .chain(self.post_import_blocks.iter().map(String::as_str))
            .chain(self.upstream_overrides.iter().map(|o| o.source.as_str()))
            .map(loaded_names)
            .collect();
        let mut helpers: Vec<Vec<String>> = self.helper_uses.iter().map(|h| loaded_names(&h.source)).collect();
        loop {
            let used = |i: usize, helpers: &[Vec<String>]| {
                let name = &self.helper_uses[i].name;
                others
                    .iter()
                    .chain(helpers.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, h)| h))
                    .any(|n| n.contains(name))
            };
            let Some(i) = (0..self.helper_uses.len()).find(|&i| self.helper_uses[i].had_users && !used(i, &helpers))
            else {
                return changed;
            };
            helpers.remove(i);
            let h = self.helper_uses.remove(i);
            self.helpers.remove(i);
            self.warnings
                .push(format!("helper `{}` not carried: every template patch or helper using it was dropped", h.name));
            changed = true;
        }
    }

    /// After a pruning round: a dropped rotary reuse is replaced by the
    /// project's OpSlot guard over the new model's own function, when the
    /// template declares the slot. `true` when that happened.
    pub fn fall_back(&mut self) -> bool {
        let carried = self.carried.iter().any(|c| c.target == "apply_rotary_pos_emb");
        if carried || self.upstream_overrides.iter().any(|o| o.target == "apply_rotary_pos_emb") {
            return false;
        }
        let Some(mut o) = self.rotary_fallback.take() else { return false };
        o.todo = "patchgen new: the template's rotary reuse was dropped by pruning; the project's OpSlot guard over the upstream function instead (full-head rotary: no partial_rotary_factor < 1, no mrope_interleaved)".into();
        self.upstream_overrides.push(o);
        true
    }

    /// After pruning: a decision to patch stands only while its patch is
    /// still carried.
    pub fn settle_decisions(&mut self, prefix: &str) {
        let carried = |f: &dyn Fn(&str) -> bool| {
            let targets =
                self.carried.iter().map(|c| &c.target).chain(self.upstream_overrides.iter().map(|o| &o.target));
            targets.map(|t| t.split_once('.').map_or(t.as_str(), |(c, _)| c)).any(f)
        };
        let rotary = carried(&|t| t == "apply_rotary_pos_emb");
        let mlp = carried(&|t| is_main(t, prefix, "MLP"));
        let norm = carried(&|t| is_main(t, prefix, "RMSNorm"));
        let d = &mut self.decisions;
        if d.rotary == Rotary::Replaced && !rotary {
            d.rotary = Rotary::Pruned;
        }
        if d.mlp == Mlp::Patched && !mlp {
            d.mlp = Mlp::Pruned;
        }
        if !d.norm.is_none() && !norm {
            d.norm = Norm::Pruned;
        }
    }

    /// Names the generated file uses but nothing defines (ruff F821): import
    /// each from where the template's upstream gets it, else drop the
    /// carried patches that use it. `true` when something changed.
    pub fn resolve_missing(&mut self, names: &[String], template: &ModelFacts, new_module: &str) -> bool {
        let mut changed = false;
        for name in names {
            if let Some(i) = self.exclude.iter().position(|e| e == name) {
                self.exclude.remove(i);
                self.warnings.push(format!(
                    "`{name}` kept in the output (the template excludes its counterpart, this model uses it)"
                ));
                changed = true;
                continue;
            }
            let already = self.imports.iter().any(|i| i.names.iter().flatten().any(|n| n == name));
            if !already
                && !name.contains(&template.prefix)
                && let Some(module) = template_binding(template, name)
            {
                self.warnings
                    .push(format!("`{name}` is imported from {module}, where the template's upstream gets it"));
                self.imports.push(patchgen_config::plan::ImportSpec {
                    module,
                    names: Some(vec![name.clone()]),
                    alias: None,
                    is_from_import: true,
                });
                changed = true;
                continue;
            }
            let (users, kept): (Vec<Carried>, Vec<Carried>) =
                std::mem::take(&mut self.carried).into_iter().partition(|c| uses_name(&c.source, name));
            self.carried = kept;
            for c in users {
                self.dropped.push(Dropped {
                    template_target: c.template_target.clone(),
                    target: c.target.clone(),
                    reason: format!("the reused `{}` uses `{name}`, which {new_module} does not define", c.import_name),
                    exception: false,
                });
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_and_name_maps() {
        assert_eq!(rename("Qwen3RMSNorm.forward", "Qwen3", "Mistral"), "MistralRMSNorm.forward");
        assert_eq!(rename("apply_rotary_pos_emb", "Qwen3", "Mistral"), "apply_rotary_pos_emb");
        let p = Patch {
            patch_type: PatchType::MethodOverride,
            target: "Qwen3_5MoeX.forward".into(),
            replacement: None,
            source_module: None,
            description: None,
            replacement_source: None,
            name_map: Some(vec![("Qwen3_5".into(), "Qwen3_5Moe".into())]),
            registered_at: patchgen_config::plan::Loc::line("c.py", 1),
        };
        assert_eq!(
            compose_name_map(&p, "Qwen3_5Moe", "Glm"),
            [("Qwen3_5".to_string(), "Glm".to_string()), ("Qwen3_5Moe".to_string(), "Glm".to_string())]
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
