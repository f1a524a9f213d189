//! The MoE needs of a new model, from the facts `moe inspect` and lint rule
//! PG401 use (never re-derived): which upstream classes hold fused expert
//! parameters (`moe::modeling::fused_expert_classes`), the recipe the
//! upstream's `conversion_mapping.py` applies to the model type
//! (`moe::recipes`, `RecipeKind::needs_conversion` — PG401's decision), and
//! whether the template's expert-parallel plan (`parallel_plan.py`) names
//! this model's fused expert parameters (their FQNs found by walking the
//! upstream classes' `__init__` assignments from the architecture class).
//!
//! When a converter is needed and the project shows how converters import
//! `ConvertedCheckpointTensor`, [`converter_py`] writes one in the shape
//! of VeOmni's `checkpoint_tensor_converter.py` (a class with `can_handle`,
//! `convert`, `finalize`; a `create_<m>_checkpoint_tensor_converter`
//! factory; a `convert_<m>_fqn_to_index_mapping`), whose key mapping is the
//! recipe's: per-expert keys stacked (gate before up, as HF's `Concatenate`
//! and `moe convert`), transposed fused keys transposed (refusing square
//! experts, as `moe convert` does), the recipe's plain renamings applied
//! (transformers skips them for custom-code classes).

use std::path::Path;

use ruff_python_ast::{Expr, Stmt, StmtClassDef};
use serde::Serialize;

use patchgen_moe::modeling::{FusedExperts, fused_expert_classes_in};
use patchgen_moe::recipes::{ExpertNaming, RecipeKind, Recipes};
use patchgen_python::semantic::walk::{self, Scope};

/// What the checkpoint converter of a new model must do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConverterKind {
    /// Stack `experts.{j}.<gate>/<up>/<down>.weight` (names as on disk).
    PerExpert { gate: String, up: String, down: String },
    /// Transpose `experts.gate_up_proj [E,H,2I]` and `down_proj [E,I,H]`.
    Transposed,
}

/// The MoE facts `new` reports (and comments in the config).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MoeNeeds {
    /// The registry key the recipe was looked up for.
    pub model_type: String,
    /// Upstream classes holding fused expert parameters.
    pub fused: Vec<FusedExperts>,
    /// Upstream `*Experts` classes without fused parameters (per-expert
    /// module lists).
    pub per_expert: Vec<String>,
    /// Carried patches whose target is an experts class.
    pub experts_patched: Vec<String>,
    /// The recipe's label (`per-expert (w1/w3/w2)`, `none (direct)`), or
    /// why there is none.
    pub recipe: String,
    pub recipe_alias: Option<String>,
    /// The recipe's kind needs a converter for a fused class (PG401).
    pub converter_needed: bool,
    /// What the converter does, when `new` can write one.
    pub converter: Option<ConverterKind>,
    /// The recipe's plain renamings the converter replays.
    pub renamings: Vec<(String, String)>,
    /// The recipe's `WeightRenaming`s with regular expressions (deepseek_v4:
    /// `^layers\.(\d+)\.ffn\.` → `layers.\1.mlp.`), as transformers compiles
    /// them (sources as one alternation, the first target with `\N` filled);
    /// non-empty only when some renaming is not plain. The converter then
    /// also handles the base-model prefix (`base_model`).
    pub regex_renamings: Vec<(Vec<String>, String)>,
    /// The base model: `base_model_prefix`, its class and its child
    /// modules (`embed_tokens`, `layers`, ...), read from the upstream.
    pub base_model: Option<BaseModel>,
    /// The fused expert parameters' FQN patterns (`model.layers.*.mlp.experts.gate_up_proj`).
    pub ep_model_keys: Vec<String>,
    /// The template's `parallel_plan.py` keys, when it has one.
    pub ep_template_keys: Option<Vec<String>>,
    /// One sentence per need.
    pub lines: Vec<String>,
}

impl MoeNeeds {
    /// The template's plan names exactly this model's fused parameters.
    pub fn ep_fits(&self) -> Option<bool> {
        let t = self.ep_template_keys.as_ref()?;
        let mut a = t.clone();
        let mut b = self.ep_model_keys.clone();
        a.sort();
        b.sort();
        Some(a == b)
    }
}

/// Where the base model sits: transformers renames checkpoint keys in the
/// base model's namespace and adds or strips `<prefix>.` afterwards.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BaseModel {
    /// `base_model_prefix` of the `*PreTrainedModel` class (`model`).
    pub prefix: String,
    /// The class the architecture class's `self.<prefix>` instantiates.
    pub class: String,
    /// The modules its `__init__` assigns (`embed_tokens`, `layers`, `norm`).
    pub children: Vec<String>,
}

/// A recipe's `WeightRenaming`s as transformers 5 compiles them
/// (`WeightTransform.__init__`): a target loses `^`/`$` and `\.` becomes
/// `.`; a source gets the target's anchors when sources and targets pair
/// up, and `.*.` becomes `\..*\.`. `Err` for what is not replayed
/// statically: a target with a group or lookaround, a source with `\1`,
/// another renaming class.
pub fn replayable_renamings(
    recipe: &patchgen_moe::recipes::Recipe,
) -> Result<Vec<(Vec<String>, String)>, crate::declined::Declined> {
    use patchgen_moe::recipes::Item;
    let mut out = Vec::new();
    for item in &recipe.items {
        let Item::Renaming { class, sources, targets, line } = item else { continue };
        let what = || crate::declined::Declined(format!("{class} at line {line} ({sources:?} -> {targets:?})"));
        if class != "WeightRenaming" || targets.is_empty() || sources.is_empty() {
            return Err(what());
        }
        let process_target = |t: &str| -> String {
            let t = t.strip_prefix('^').unwrap_or(t);
            let t = t.strip_suffix('$').unwrap_or(t);
            t.replace("\\.", ".")
        };
        if targets.iter().any(|t| process_target(t).contains(['(', ')', '[', '*', '?', '|'])) {
            return Err(what());
        }
        let mut srcs = Vec::new();
        for (i, src) in sources.iter().enumerate() {
            if src.contains("\\1") {
                return Err(what());
            }
            let mut p = src.clone();
            if sources.len() == targets.len() {
                if targets[i].starts_with('^') && !p.starts_with('^') {
                    p.insert(0, '^');
                }
                if targets[i].ends_with('$') && !p.ends_with('$') {
                    p.push('$');
                }
            }
            srcs.push(p.replace(".*.", "\\..*\\."));
        }
        out.push((srcs, process_target(&targets[0])));
    }
    Ok(out)
}

/// The upstream's base model (`base_model_prefix`, the class the
/// architecture class holds there, that class's child modules).
fn base_model(body: &[Stmt], root: &str) -> Option<BaseModel> {
    let classes = class_index(body);
    let prefix = classes.iter().filter(|c| c.name.as_str().ends_with("PreTrainedModel")).find_map(|c| {
        c.body.iter().find_map(|s| match s {
            Stmt::Assign(a)
                if a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == "base_model_prefix")) =>
            {
                match &*a.value {
                    Expr::StringLiteral(l) => Some(l.value.to_str().to_string()),
                    _ => None,
                }
            }
            _ => None,
        })
    })?;
    let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
    let class = init_assignments(&classes, root, 3).into_iter().find(|(a, _)| *a == prefix).and_then(|(_, v)| {
        let mut found = Vec::new();
        instantiated(v, &names, &mut found);
        found.into_iter().map(|(c, _)| c).find(|c| names.contains(&c.as_str()))
    })?;
    let mut children = Vec::new();
    for (attr, v) in init_assignments(&classes, &class, 3) {
        let mut found = Vec::new();
        instantiated(v, &names, &mut found);
        if !found.is_empty() && !children.contains(&attr) {
            children.push(attr);
        }
    }
    Some(BaseModel { prefix, class, children })
}

/// Whether `class`'s `__init__` (or an inherited one) assigns
/// `self.<attr>`: an architecture class holding the base model there.
pub fn holds(body: &[Stmt], class: &str, attr: &str) -> bool {
    let classes = class_index(body);
    init_assignments(&classes, class, 3).iter().any(|(a, _)| a == attr)
}

/// What [`analyse`] reads.
pub struct MoeInput<'a> {
    pub module_body: &'a [Stmt],
    pub module_text: &'a str,
    /// Classes of the upstream module named like experts (`*Experts`).
    pub experts_classes: Vec<String>,
    /// The architecture class the FQNs start from (`<P>ForCausalLM`).
    pub root_class: &'a str,
    /// The registry key (`model_type`).
    pub model_type: &'a str,
    pub recipes: Result<&'a Recipes, &'a patchgen_moe::recipes::RecipeError>,
    pub upstream_version: &'a str,
    /// Targets of the carried patches.
    pub carried_targets: Vec<String>,
    /// The template's `parallel_plan.py` text and path, when it has one.
    pub template_plan: Option<(&'a Path, &'a str)>,
}

pub fn analyse(input: &MoeInput<'_>) -> MoeNeeds {
    let index = patchgen_diagnostics::LineIndex::new(input.module_text);
    let line_of = |offset: usize| index.line_of(offset.min(input.module_text.len()));
    let fused = fused_expert_classes_in(input.module_body, &line_of);
    let per_expert: Vec<String> =
        input.experts_classes.iter().filter(|c| !fused.iter().any(|f| &f.class == *c)).cloned().collect();
    let experts_patched: Vec<String> = input
        .carried_targets
        .iter()
        .filter(|t| {
            let class = t.split('.').next().unwrap_or("");
            fused.iter().any(|f| f.class == class) || per_expert.iter().any(|c| c == class)
        })
        .cloned()
        .collect();
    let mut needs =
        MoeNeeds { model_type: input.model_type.to_string(), per_expert, experts_patched, ..MoeNeeds::default() };
    needs.lines.push(experts_line(&needs, &fused));
    match &input.recipes {
        Ok(recipes) => decide_converter(input, recipes, &fused, &mut needs),
        Err(e) => {
            needs.recipe = format!("unknown ({e})");
            needs.lines.push(format!(
                "checkpoint converter: undecided — the upstream's conversion recipes could not be read ({e}); check the checkpoint with `patchgen moe inspect`"
            ));
        }
    }
    expert_parallel_plan(input, fused, &mut needs);
    needs
}

/// The experts replacement: carried or not, and each experts class's layout upstream.
fn experts_line(needs: &MoeNeeds, fused: &[FusedExperts]) -> String {
    let all_experts: Vec<String> =
        fused.iter().map(|f| f.class.clone()).chain(needs.per_expert.iter().cloned()).collect();
    let layout = |c: &str| {
        if fused.iter().any(|f| f.class == c) {
            let f = fused.iter().find(|f| f.class == c).unwrap();
            format!(
                "{c} fused (`gate_up_proj` nn.Parameter, line {}{})",
                f.line,
                if f.bias { ", with biases" } else { "" }
            )
        } else {
            format!("{c} per-expert (no fused parameters)")
        }
    };
    match (all_experts.is_empty(), needs.experts_patched.is_empty()) {
        (true, _) => {
            "experts replacement: no experts class upstream (`*Experts`, fused parameters): check the MoE block by hand"
                .into()
        }
        (false, true) => format!(
            "experts replacement: not carried (the template's experts patch has no counterpart or was dropped); upstream {}",
            all_experts.iter().map(|c| layout(c)).collect::<Vec<_>>().join(", ")
        ),
        (false, false) => format!(
            "experts replacement: carried ({}); upstream {}",
            needs.experts_patched.join(", "),
            all_experts.iter().map(|c| layout(c)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The recipe and whether a converter is needed (PG401's decision), and
/// which one `new` writes.
fn decide_converter(input: &MoeInput<'_>, recipes: &Recipes, fused: &[FusedExperts], needs: &mut MoeNeeds) {
    let kind = recipes.checkpoint_layout_need(input.model_type);
    let recipe = recipes.recipe(input.model_type);
    needs.recipe = kind.label();
    needs.recipe_alias = recipe.and_then(|r| r.alias_of.clone());
    needs.converter_needed = !fused.is_empty() && kind.needs_conversion();
    let via = needs.recipe_alias.as_ref().map(|a| format!(" (through the `{a}` recipe)")).unwrap_or_default();
    if !needs.converter_needed {
        needs.lines.push(if fused.is_empty() {
            format!(
                "checkpoint converter: not needed — no fused expert parameters upstream (recipe {}{via}): checkpoint keys load as they are",
                needs.recipe
            )
        } else {
            format!(
                "checkpoint converter: not needed — transformers {} has recipe {} for `{}`{via}: the checkpoint is expected in the fused layout {} declares (verify a real checkpoint with `patchgen moe inspect`)",
                input.upstream_version, needs.recipe, input.model_type, fused[0].class
            )
        });
        return;
    }
    let renamings = converter_renamings(input, recipe, needs);
    needs.converter = match (&kind, &renamings) {
        (_, Err(_)) => None,
        (RecipeKind::PerExpert { naming: ExpertNaming::GateUpDown }, _) => {
            Some(ConverterKind::PerExpert { gate: "gate_proj".into(), up: "up_proj".into(), down: "down_proj".into() })
        }
        (RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 }, _) => {
            Some(ConverterKind::PerExpert { gate: "w1".into(), up: "w3".into(), down: "w2".into() })
        }
        (RecipeKind::FusedTransposed, _) => Some(ConverterKind::Transposed),
        _ => None,
    };
    needs.renamings = renamings.clone().unwrap_or_default();
    let what = match (&needs.converter, &renamings) {
        (Some(_), _) => {
            "a converter is written (checkpoint_tensor_converter.py) and __init__.py registers it (pattern B)"
                .to_string()
        }
        (None, Err(r)) => format!(
            "the recipe renames with a regular expression that is not replayed ({r}): write the converter by hand"
        ),
        (None, Ok(_)) => "no converter template for this recipe: write it by hand".to_string(),
    };
    needs.lines.push(format!(
        "checkpoint converter: needed — transformers {} loads `{}` checkpoints {}{via}, the upstream {} has fused expert parameters, and transformers skips its recipe for the generated (custom-code) classes (PG401): {what}",
        input.upstream_version,
        input.model_type,
        needs.recipe,
        fused[0].class
    ));
}

/// The recipe's renamings a needed converter replays: plain ones, else
/// regular expressions as transformers compiles them with the base-model
/// prefix handled around them (`needs.regex_renamings`, `needs.base_model`);
/// `Err` with why they are not replayed.
fn converter_renamings(
    input: &MoeInput<'_>,
    recipe: Option<&patchgen_moe::recipes::Recipe>,
    needs: &mut MoeNeeds,
) -> Result<Vec<(String, String)>, String> {
    let renamings: Result<Vec<(String, String)>, String> =
        recipe.map(|r| r.plain_renamings().map_err(|e| e.to_string())).unwrap_or(Ok(Vec::new()));
    let (Err(plain), Some(r)) = (&renamings, recipe) else { return renamings };
    match (replayable_renamings(r), base_model(input.module_body, input.root_class)) {
        (Ok(regex), Some(base)) => {
            needs.regex_renamings = regex;
            needs.base_model = Some(base);
            Ok(Vec::new())
        }
        (Err(e), _) => Err(e.0),
        (Ok(_), None) => {
            Err(format!("{plain} (no `base_model_prefix` and base model class found from {})", input.root_class))
        }
    }
}

/// The fused expert parameters' FQNs, and whether the template's
/// `parallel_plan.py` shards exactly those.
fn expert_parallel_plan(input: &MoeInput<'_>, fused: Vec<FusedExperts>, needs: &mut MoeNeeds) {
    let classes = class_index(input.module_body);
    for f in &fused {
        for path in paths_to(&classes, input.root_class, &f.class) {
            for p in parameters(&classes, &f.class) {
                let key = format!("{path}.{p}");
                if !needs.ep_model_keys.contains(&key) {
                    needs.ep_model_keys.push(key);
                }
            }
        }
    }
    needs.fused = fused;
    needs.ep_template_keys =
        input.template_plan.map(|(_, text)| plan_keys(text).map(|(k, _, _)| k).unwrap_or_default());
    let model = if needs.ep_model_keys.is_empty() {
        format!("no fused expert parameter reachable from {}", input.root_class)
    } else {
        needs.ep_model_keys.join(", ")
    };
    needs.lines.push(match (input.template_plan, needs.ep_fits()) {
        (None, _) => format!("expert-parallel plan: the template has no parallel_plan.py; this model's fused expert parameters: {model}"),
        (Some((p, _)), Some(true)) => format!(
            "expert-parallel plan: the template's {} fits (it shards exactly {model}); parallel_plan.py written with the same keys",
            p.display()
        ),
        (Some((p, _)), _) => format!(
            "expert-parallel plan: the template's {} does not fit — it shards {}, this model's fused expert parameters are {model}{}",
            p.display(),
            needs.ep_template_keys.as_ref().map(|k| k.join(", ")).unwrap_or_default(),
            if needs.ep_model_keys.is_empty() { "" } else { "; parallel_plan.py written with this model's keys" }
        ),
    });
}

/// Classes by name, with their bases.
fn class_index(body: &[Stmt]) -> Vec<&StmtClassDef> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::ClassDef(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// `self.<attr> = ...` assignments of a class's `__init__` (nested blocks
/// included), inherited from a base class of the module when the class has
/// no `__init__`.
fn init_assignments<'a>(classes: &[&'a StmtClassDef], class: &str, depth: usize) -> Vec<(String, &'a Expr)> {
    let Some(c) = classes.iter().find(|c| c.name.as_str() == class) else {
        return Vec::new();
    };
    let init = c.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(f),
        _ => None,
    });
    let Some(init) = init else {
        if depth == 0 {
            return Vec::new();
        }
        let bases: Vec<String> = c
            .bases()
            .iter()
            .filter_map(|b| if let Expr::Name(n) = b { Some(n.id.to_string()) } else { None })
            .collect();
        return bases.iter().flat_map(|b| init_assignments(classes, b, depth - 1)).collect();
    };
    let mut out = Vec::new();
    walk::for_each_statement(&init.body, Scope::Own, |s| {
        if let Stmt::Assign(a) = s {
            for t in &a.targets {
                if let Expr::Attribute(at) = t
                    && matches!(&*at.value, Expr::Name(n) if n.id.as_str() == "self")
                {
                    out.push((at.attr.to_string(), &*a.value));
                }
            }
        }
    });
    out
}

/// The classes an assigned value instantiates, with `.*` when it is a
/// module list of them. `Cls._from_config(...)` is `Cls`;
/// `AutoModel.from_config(config.text_config)` is the module's one
/// `*TextModel` class (what the auto mapping of the sub-config names).
fn instantiated(e: &Expr, names: &[&str], out: &mut Vec<(String, bool)>) {
    match e {
        Expr::If(i) => {
            instantiated(&i.body, names, out);
            instantiated(&i.orelse, names, out);
        }
        Expr::Call(c) => {
            let callee = match &*c.func {
                Expr::Name(n) => n.id.to_string(),
                Expr::Attribute(a) if matches!(a.attr.as_str(), "from_config" | "_from_config") => match &*a.value {
                    Expr::Name(n) if n.id.as_str().starts_with("Auto") => {
                        let sub = match c.arguments.args.first() {
                            Some(Expr::Attribute(x)) => x.attr.as_str().strip_suffix("_config").unwrap_or(""),
                            _ => "",
                        };
                        let mut camel = String::new();
                        for part in sub.split('_').filter(|p| !p.is_empty()) {
                            let mut ch = part.chars();
                            if let Some(f) = ch.next() {
                                camel.extend(f.to_uppercase());
                                camel.push_str(ch.as_str());
                            }
                        }
                        let suffix = format!("{camel}Model");
                        let found: Vec<&&str> = names
                            .iter()
                            .filter(|n| !camel.is_empty() && n.ends_with(&suffix) && !n.contains("PreTrained"))
                            .collect();
                        if let [one] = found.as_slice() {
                            out.push((one.to_string(), false));
                        }
                        return;
                    }
                    Expr::Name(n) => n.id.to_string(),
                    _ => return,
                },
                Expr::Attribute(a) => a.attr.to_string(),
                _ => return,
            };
            if callee == "ModuleList" {
                let mut inner = Vec::new();
                for a in c.arguments.args.iter() {
                    match a {
                        Expr::ListComp(l) => instantiated(&l.elt, names, &mut inner),
                        Expr::List(l) => l.elts.iter().for_each(|x| instantiated(x, names, &mut inner)),
                        Expr::Generator(g) => instantiated(&g.elt, names, &mut inner),
                        _ => {}
                    }
                }
                out.extend(inner.into_iter().map(|(c, _)| (c, true)));
            } else if callee.chars().next().is_some_and(char::is_uppercase) {
                out.push((callee, false));
            }
        }
        _ => {}
    }
}

/// Every attribute path from `root` to an instance of `target`
/// (`model.layers.*.mlp.experts`).
fn paths_to(classes: &[&StmtClassDef], root: &str, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
    let mut stack: Vec<(String, String, usize)> = vec![(root.to_string(), String::new(), 0)];
    while let Some((class, path, depth)) = stack.pop() {
        if depth > 10 {
            continue;
        }
        for (attr, value) in init_assignments(classes, &class, 3) {
            let mut found = Vec::new();
            instantiated(value, &names, &mut found);
            for (child, list) in found {
                let p = match (path.is_empty(), list) {
                    (true, false) => attr.clone(),
                    (true, true) => format!("{attr}.*"),
                    (false, false) => format!("{path}.{attr}"),
                    (false, true) => format!("{path}.{attr}.*"),
                };
                if child == target {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                } else if classes.iter().any(|c| c.name.as_str() == child) && child != class {
                    stack.push((child, p, depth + 1));
                }
            }
        }
    }
    out.sort();
    out
}

/// The `nn.Parameter` attributes a class's `__init__` assigns, in order.
fn parameters(classes: &[&StmtClassDef], class: &str) -> Vec<String> {
    init_assignments(classes, class, 3)
        .into_iter()
        .filter(|(_, v)| match v {
            Expr::Call(c) => match &*c.func {
                Expr::Name(n) => n.id.as_str() == "Parameter",
                Expr::Attribute(a) => a.attr.as_str() == "Parameter",
                _ => false,
            },
            _ => false,
        })
        .map(|(a, _)| a)
        .collect()
}

mod converter;
mod parallel_plan;

pub use converter::{ConverterSpec, config_attr, converter_functions, converter_py};
pub use parallel_plan::{parallel_plan_py, plan_keys};

#[cfg(test)]
mod tests {
    use super::*;

    const MODELING: &str = r#"
from torch import nn


class ToyExperts(nn.Module):
    def __init__(self, config):
        self.gate_up_proj = nn.Parameter(torch.empty(1))
        self.down_proj = nn.Parameter(torch.empty(1))


class ToyMLP(nn.Module):
    def __init__(self, config):
        self.up = nn.Linear(1, 1)


class ToyMoe(nn.Module):
    def __init__(self, config):
        self.experts = ToyExperts(config)
        self.shared_experts = ToyMLP(config)


class ToyLayer(nn.Module):
    def __init__(self, config, i):
        self.mlp = ToyMoe(config) if i >= config.k else ToyMLP(config)


class ToyModel(nn.Module):
    def __init__(self, config):
        self.layers = nn.ModuleList([ToyLayer(config, i) for i in range(3)])


class ToyForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__(config)
        self.model = ToyModel(config)
"#;

    #[test]
    fn expert_fqns_follow_init_assignments() {
        let parsed = ruff_python_parser::parse_module(MODELING).unwrap();
        let classes = class_index(&parsed.syntax().body);
        assert_eq!(paths_to(&classes, "ToyForCausalLM", "ToyExperts"), vec!["model.layers.*.mlp.experts"]);
        assert_eq!(parameters(&classes, "ToyExperts"), vec!["gate_up_proj", "down_proj"]);
    }

    #[test]
    fn the_plan_dict_is_rewritten_in_place() {
        let t = "from x import Shard\n\n\ndef get_parallel_plan():\n    ep_plan = {\n        \"a.b\": Shard(0),\n    }\n    return ep_plan\n";
        let (keys, _, value) = plan_keys(t).unwrap();
        assert_eq!(keys, vec!["a.b"]);
        assert_eq!(value, "Shard(0)");
        let out = parallel_plan_py(t, &["c.d".into(), "c.e".into()]).unwrap();
        assert_eq!(
            out,
            "from x import Shard\n\n\ndef get_parallel_plan():\n    ep_plan = {\n        \"c.d\": Shard(0),\n        \"c.e\": Shard(0),\n    }\n    return ep_plan\n"
        );
    }
}
