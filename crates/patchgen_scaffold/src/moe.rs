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

use std::fmt::Write;
use std::path::Path;

use ruff_python_ast::{Expr, Stmt, StmtClassDef};
use ruff_text_size::Ranged;
use serde::Serialize;

use patchgen_moe::config::MoeDims;
use patchgen_moe::modeling::{FusedExperts, fused_expert_classes_in};
use patchgen_moe::recipes::{ExpertNaming, RecipeKind, Recipes};

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
pub fn replayable_renamings(recipe: &patchgen_moe::recipes::Recipe) -> Result<Vec<(Vec<String>, String)>, String> {
    use patchgen_moe::recipes::Item;
    let mut out = Vec::new();
    for item in &recipe.items {
        let Item::Renaming { class, sources, targets, line } = item else { continue };
        let what = || format!("{class} at line {line} ({sources:?} -> {targets:?})");
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
    pub recipes: Result<&'a Recipes, String>,
    pub upstream_version: &'a str,
    /// Targets of the carried patches.
    pub carried_targets: Vec<String>,
    /// The template's `parallel_plan.py` text and path, when it has one.
    pub template_plan: Option<(&'a Path, &'a str)>,
}

pub fn analyse(input: &MoeInput<'_>) -> MoeNeeds {
    let line_of = |offset: usize| {
        input.module_text[..offset.min(input.module_text.len())].bytes().filter(|&b| b == b'\n').count() + 1
    };
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
    // Experts replacement.
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
    needs.lines.push(match (all_experts.is_empty(), needs.experts_patched.is_empty()) {
        (true, _) => "experts replacement: no experts class upstream (`*Experts`, fused parameters): check the MoE block by hand".into(),
        (false, true) => format!(
            "experts replacement: not carried (the template's experts patch has no counterpart or was dropped); upstream {}",
            all_experts.iter().map(|c| layout(c)).collect::<Vec<_>>().join(", ")
        ),
        (false, false) => format!(
            "experts replacement: carried ({}); upstream {}",
            needs.experts_patched.join(", "),
            all_experts.iter().map(|c| layout(c)).collect::<Vec<_>>().join(", ")
        ),
    });
    // Recipe and converter (PG401's decision).
    match &input.recipes {
        Ok(recipes) => {
            let kind = recipes.checkpoint_layout_need(input.model_type);
            let recipe = recipes.recipe(input.model_type);
            needs.recipe = kind.label();
            needs.recipe_alias = recipe.and_then(|r| r.alias_of.clone());
            needs.converter_needed = !fused.is_empty() && kind.needs_conversion();
            let via = needs.recipe_alias.as_ref().map(|a| format!(" (through the `{a}` recipe)")).unwrap_or_default();
            let mut renamings = recipe.map(|r| r.plain_renamings()).unwrap_or(Ok(Vec::new()));
            if needs.converter_needed
                && renamings.is_err()
                && let Some(r) = recipe
            {
                // Regular expressions: replayed as transformers compiles them,
                // with the base-model prefix handled around them.
                match (replayable_renamings(r), base_model(input.module_body, input.root_class)) {
                    (Ok(regex), Some(base)) => {
                        needs.regex_renamings = regex;
                        needs.base_model = Some(base);
                        renamings = Ok(Vec::new());
                    }
                    (Err(e), _) => renamings = Err(e),
                    (Ok(_), None) => {
                        renamings = Err(format!(
                            "{} (no `base_model_prefix` and base model class found from {})",
                            renamings.unwrap_err(),
                            input.root_class
                        ))
                    }
                }
            }
            if needs.converter_needed {
                needs.converter = match (&kind, &renamings) {
                    (_, Err(_)) => None,
                    (RecipeKind::PerExpert { naming: ExpertNaming::GateUpDown }, _) => Some(ConverterKind::PerExpert {
                        gate: "gate_proj".into(),
                        up: "up_proj".into(),
                        down: "down_proj".into(),
                    }),
                    (RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 }, _) => {
                        Some(ConverterKind::PerExpert { gate: "w1".into(), up: "w3".into(), down: "w2".into() })
                    }
                    (RecipeKind::FusedTransposed, _) => Some(ConverterKind::Transposed),
                    _ => None,
                };
                needs.renamings = renamings.clone().unwrap_or_default();
                let what = match (&needs.converter, &renamings) {
                    (Some(_), _) => "a converter is written (checkpoint_tensor_converter.py) and __init__.py registers it (pattern B)".to_string(),
                    (None, Err(r)) => format!("the recipe renames with a regular expression that is not replayed ({r}): write the converter by hand"),
                    (None, Ok(_)) => "no converter template for this recipe: write it by hand".to_string(),
                };
                needs.lines.push(format!(
                    "checkpoint converter: needed — transformers {} loads `{}` checkpoints {}{via}, the upstream {} has fused expert parameters, and transformers skips its recipe for the generated (custom-code) classes (PG401): {what}",
                    input.upstream_version,
                    input.model_type,
                    needs.recipe,
                    fused[0].class
                ));
            } else if fused.is_empty() {
                needs.lines.push(format!(
                    "checkpoint converter: not needed — no fused expert parameters upstream (recipe {}{via}): checkpoint keys load as they are",
                    needs.recipe
                ));
            } else {
                needs.lines.push(format!(
                    "checkpoint converter: not needed — transformers {} has recipe {} for `{}`{via}: the checkpoint is expected in the fused layout {} declares (verify a real checkpoint with `patchgen moe inspect`)",
                    input.upstream_version, needs.recipe, input.model_type, fused[0].class
                ));
            }
        }
        Err(e) => {
            needs.recipe = format!("unknown ({e})");
            needs.lines.push(format!(
                "checkpoint converter: undecided — the upstream's conversion recipes could not be read ({e}); check the checkpoint with `patchgen moe inspect`"
            ));
        }
    }
    // Expert-parallel plan.
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
    needs
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
    fn walk<'a>(body: &'a [Stmt], out: &mut Vec<(String, &'a Expr)>) {
        for s in body {
            match s {
                Stmt::Assign(a) => {
                    for t in &a.targets {
                        if let Expr::Attribute(at) = t
                            && matches!(&*at.value, Expr::Name(n) if n.id.as_str() == "self")
                        {
                            out.push((at.attr.to_string(), &*a.value));
                        }
                    }
                }
                Stmt::If(i) => {
                    walk(&i.body, out);
                    for c in &i.elif_else_clauses {
                        walk(&c.body, out);
                    }
                }
                _ => {}
            }
        }
    }
    walk(&init.body, &mut out);
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

/// The string keys of the plan dict of a `parallel_plan.py` (the first
/// dict literal whose keys are strings and values calls), the dict's byte
/// range and the text of its first value (`Shard(0)`).
pub fn plan_keys(text: &str) -> Option<(Vec<String>, std::ops::Range<usize>, String)> {
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let mut found = None;
    fn visit<'a>(body: &'a [Stmt], found: &mut Option<&'a ruff_python_ast::ExprDict>) {
        for s in body {
            if found.is_some() {
                return;
            }
            match s {
                Stmt::FunctionDef(f) => visit(&f.body, found),
                Stmt::Assign(a) => {
                    if let Expr::Dict(d) = &*a.value
                        && !d.items.is_empty()
                        && d.items
                            .iter()
                            .all(|i| matches!(i.key, Some(Expr::StringLiteral(_))) && matches!(i.value, Expr::Call(_)))
                    {
                        *found = Some(d);
                    }
                }
                _ => {}
            }
        }
    }
    visit(&parsed.syntax().body, &mut found);
    let d = found?;
    let keys = d
        .items
        .iter()
        .filter_map(|i| match &i.key {
            Some(Expr::StringLiteral(s)) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .collect();
    let range: std::ops::Range<usize> = d.start().into()..d.end().into();
    let value = text[d.items[0].value.range()].to_string();
    Some((keys, range, value))
}

/// The new model's `parallel_plan.py`: the template's, with its plan dict
/// listing this model's fused expert parameters.
pub fn parallel_plan_py(template: &str, keys: &[String]) -> Option<String> {
    let (_, range, value) = plan_keys(template)?;
    let mut dict = String::from("{\n");
    // The dict's indentation: the column of the line it starts on, plus four.
    let line_start = template[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = template[line_start..].chars().take_while(|c| *c == ' ').collect();
    for k in keys {
        let _ = writeln!(dict, "{indent}    {}: {value},", super::render::py_str(k));
    }
    let _ = write!(dict, "{indent}}}");
    Some(format!("{}{dict}{}", &template[..range.start], &template[range.end..]))
}

/// Where the converter finds the number of experts (and, for a
/// transposer, H and I) on `model.config`: the toy config's keys, read as
/// `moe inspect` reads a `config.json`.
pub fn config_attr(dims: &MoeDims, key: &str) -> String {
    let mut path = String::from("model.config");
    for part in dims.text_path.split('.').filter(|p| !p.is_empty()) {
        let _ = write!(path, ".{part}");
    }
    format!("{path}.{key}")
}

/// What the converter module needs besides the facts.
pub struct ConverterSpec<'a> {
    pub licence: &'a str,
    /// `from ...checkpoint_tensor_loading import ConvertedCheckpointTensor`, as the project writes it.
    pub converted_import: &'a str,
    pub hf_name: &'a str,
    pub prefix: &'a str,
    pub upstream_version: &'a str,
    pub dims: &'a MoeDims,
}

/// A Python raw string literal where one can hold `s` (regular
/// expressions read better so), else an escaped one.
fn py_raw(s: &str) -> String {
    if s.contains(['"', '\n']) || s.ends_with('\\') { super::render::py_str(s) } else { format!("r\"{s}\"") }
}

/// The names `__init__.py` imports from the converter module.
pub fn converter_functions(hf_name: &str) -> (String, String) {
    (format!("create_{hf_name}_checkpoint_tensor_converter"), format!("convert_{hf_name}_fqn_to_index_mapping"))
}

/// `checkpoint_tensor_converter.py` for the new model, or why not.
pub fn converter_py(needs: &MoeNeeds, spec: &ConverterSpec<'_>) -> Result<String, String> {
    let kind = needs.converter.as_ref().ok_or("no converter kind")?;
    let experts_key = spec.dims.experts_key.as_deref().ok_or("the toy config has no experts count")?;
    let (create, fqn) = converter_functions(spec.hf_name);
    let class = format!("{}CheckpointTensorConverter", spec.prefix);
    let renames: Vec<String> = needs
        .renamings
        .iter()
        .map(|(a, b)| format!("    ({}, {}),\n", super::render::py_str(a), super::render::py_str(b)))
        .collect();
    let mut out = String::new();
    if !spec.licence.is_empty() {
        out.push_str(spec.licence.trim_end());
        out.push_str("\n\n");
    }
    let layout = match kind {
        ConverterKind::PerExpert { gate, up, down } => format!(
            "    checkpoint (per-expert):\n        <module>.experts.{{j}}.{gate}.weight  [I, H]\n        <module>.experts.{{j}}.{up}.weight  [I, H]\n        <module>.experts.{{j}}.{down}.weight  [H, I]\n\n    patched model (fused):\n        <module>.experts.gate_up_proj  [E, 2*I, H]  (gate rows first)\n        <module>.experts.down_proj     [E, H, I]\n"
        ),
        ConverterKind::Transposed => "    checkpoint (fused, transposed):\n        <module>.experts.gate_up_proj  [E, H, 2*I]\n        <module>.experts.down_proj     [E, I, H]\n\n    patched model (fused):\n        <module>.experts.gate_up_proj  [E, 2*I, H]\n        <module>.experts.down_proj     [E, H, I]\n".to_string(),
    };
    let rename_doc = if needs.renamings.is_empty() {
        String::new()
    } else {
        format!(
            "\nThe recipe's renamings are applied to every key: {}.\n",
            needs.renamings.iter().map(|(a, b)| format!("`{a}` -> `{b}`")).collect::<Vec<_>>().join(", ")
        )
    };
    let _ = write!(
        out,
        "\"\"\"\nRuntime checkpoint tensor converter for {p}, written by `patchgen new`.\n\ntransformers {v} loads `{mt}` checkpoints with the recipe {r} (its conversion_mapping.py),\nbut skips it for the generated (custom-code) classes; this converter does the same at load time:\n\n{layout}{rename_doc}\"\"\"\n\nimport re\n\nimport torch\n\n{imp}\n\n\n",
        p = spec.prefix,
        v = spec.upstream_version,
        mt = needs.model_type,
        r = needs.recipe,
        imp = spec.converted_import,
    );
    let regex = !needs.regex_renamings.is_empty();
    if regex {
        let base = needs.base_model.as_ref().ok_or("no base model for the recipe's renamings")?;
        if matches!(kind, ConverterKind::Transposed) {
            return Err("a transposed recipe with regular-expression renamings is not written".into());
        }
        out.push_str("# The recipe's WeightRenamings as transformers compiles them: the sources as one alternation\n# of named groups, the first target with its `\\N` filled from the matched source.\n_RENAMINGS = tuple(\n    (re.compile(\"|\".join(f\"(?P<g{i}>{source})\" for i, source in enumerate(sources))), target)\n    for sources, target in (\n");
        for (sources, target) in &needs.regex_renamings {
            let srcs: Vec<String> = sources.iter().map(|x| py_raw(x)).collect();
            let _ = writeln!(out, "        (({},), {}),", srcs.join(", "), py_raw(target));
        }
        out.push_str("    )\n)\n");
        let children: Vec<String> = base.children.iter().map(|c| super::render::py_str(&format!("{c}."))).collect();
        let _ = write!(
            out,
            "# The base model ({class}, `base_model_prefix` {prefix:?}): transformers renames in its namespace,\n# then adds or strips the prefix for the model it loads.\n_BASE_PREFIX = {p}\n_BASE_CHILDREN = ({c},)\n\n\n",
            class = base.class,
            prefix = base.prefix,
            p = super::render::py_str(&format!("{}.", base.prefix)),
            c = children.join(", "),
        );
        out.push_str(
            r#"def _fill(target, match, start):
    """The target's backreferences (backslash + group number) filled from the matched source's groups."""
    return re.sub(r"\\(\d+)", lambda ref: match.group(start + int(ref.group(1))), target)


def _rename(name):
    """The recipe's renamings in order, each replacing its first match (transformers' rename_source_key)."""
    for pattern, target in _RENAMINGS:
        match = pattern.search(name)
        if match is None:
            continue
        group = next(g for g, value in match.groupdict().items() if value is not None)
        name = name.replace(match.group(0), _fill(target, match, pattern.groupindex[group]), 1)
    return name


def _convert_key(name, target_prefix):
    """A checkpoint key renamed in the base model's namespace, then prefixed as the loaded model names it."""
    has_prefix = name.startswith(_BASE_PREFIX)
    source = name[len(_BASE_PREFIX) :] if has_prefix else name
    converted = _rename(source)
    if converted.startswith(_BASE_CHILDREN):
        return target_prefix + converted
    if has_prefix and converted == source:
        return name
    return converted


"#,
        );
    } else {
        let _ = write!(out, "_RENAMES = (\n{})\n\n\n", renames.concat());
        out.push_str(
            "def _rename(name):\n    \"\"\"The recipe's renamings (transformers applies them at load, but not to custom-code classes).\"\"\"\n    for old, new in _RENAMES:\n        name = name.replace(old, new)\n    return name\n\n\n",
        );
    }
    match kind {
        ConverterKind::PerExpert { gate, up, down } => {
            let _ = write!(
                out,
                "_EXPERT_KEY = re.compile(r\"^(.+)\\.experts\\.(\\d+)\\.({gate}|{up}|{down})\\.weight$\")\n_ROLE = {{\"{gate}\": \"gate\", \"{up}\": \"up\", \"{down}\": \"down\"}}\n\n\n"
            );
            let _ = write!(
                out,
                r#"class {class}:
    """Stacks per-expert checkpoint tensors into the fused expert parameters.

    Each (module, projection) is buffered until all ``num_experts`` experts arrived; gate and up
    are concatenated (gate first) once both are stacked. Other keys pass through renamed.
    """

    def __init__(self, num_experts{init_param}):
        self.num_experts = num_experts{init_assign}
        self._experts = {{}}
        self._stacked = {{}}

    def _key(self, name):
        return {key_expr}

    def can_handle(self, name):
        key = self._key(name)
        return _EXPERT_KEY.match(key) is not None or key != name

    def convert(self, name, tensor):
        key = self._key(name)
        match = _EXPERT_KEY.match(key)
        if match is None:
            return ConvertedCheckpointTensor(name=key, tensor=tensor)
        module, expert, role = match.group(1), int(match.group(2)), _ROLE[match.group(3)]
        experts = self._experts.setdefault((module, role), {{}})
        experts[expert] = tensor
        if len(experts) < self.num_experts:
            return None
        del self._experts[(module, role)]
        stacked = torch.stack([experts[i] for i in range(self.num_experts)])
        if role == "down":
            return ConvertedCheckpointTensor(name=f"{{module}}.experts.down_proj", tensor=stacked)
        pair = self._stacked.setdefault(module, {{}})
        pair[role] = stacked
        if len(pair) < 2:
            return None
        del self._stacked[module]
        merged = torch.cat([pair["gate"], pair["up"]], dim=1)
        return ConvertedCheckpointTensor(name=f"{{module}}.experts.gate_up_proj", tensor=merged)

    def finalize(self):
        problems = []
        if self._experts:
            found = ", ".join(f"{{m}} {{r}}: {{len(e)}}" for (m, r), e in sorted(self._experts.items()))
            problems.append(f"experts missing (expected {{self.num_experts}}): {{found}}")
        if self._stacked:
            found = ", ".join(f"{{m}} has only {{sorted(p)}}" for m, p in sorted(self._stacked.items()))
            problems.append(f"gate/up pair incomplete: {{found}}")
        if problems:
            raise RuntimeError("{prefix} checkpoint converter: incomplete checkpoint: " + "; ".join(problems))
        return []


def {create}(model):
    """Registered on the model classes as ``_create_checkpoint_tensor_converter`` (__init__.py)."""
    return {class}(num_experts={experts}{factory_arg})


def {fqn}(fqn_to_index_mapping{fqn_param}):
    """The checkpoint index's keys as the converter emits them (a fused tensor in the first shard of its sources)."""
    converted = {{}}
    for name, index in fqn_to_index_mapping.items():
        key = {fqn_key}
        match = _EXPERT_KEY.match(key)
        if match is None:
            converted[key] = index
            continue
        module = match.group(1)
        proj = "down_proj" if _ROLE[match.group(3)] == "down" else "gate_up_proj"
        fused = f"{{module}}.experts.{{proj}}"
        converted[fused] = min(index, converted.get(fused, index))
    return converted
"#,
                prefix = spec.prefix,
                experts = config_attr(spec.dims, experts_key),
                init_param = if regex { ", target_prefix=\"\"" } else { "" },
                init_assign = if regex { "\n        self.target_prefix = target_prefix" } else { "" },
                key_expr = if regex { "_convert_key(name, self.target_prefix)" } else { "_rename(name)" },
                factory_arg = match &needs.base_model {
                    Some(b) if regex => format!(
                        ", target_prefix=_BASE_PREFIX if hasattr(model, {}) else \"\"",
                        super::render::py_str(&b.prefix)
                    ),
                    _ => String::new(),
                },
                fqn_param = if regex { ", target_model_prefix=_BASE_PREFIX" } else { "" },
                fqn_key = if regex { "_convert_key(name, target_model_prefix)" } else { "_rename(name)" },
            );
        }
        ConverterKind::Transposed => {
            let hidden = config_attr(spec.dims, "hidden_size");
            let inter = config_attr(
                spec.dims,
                spec.dims.intermediate_key.as_deref().ok_or("the toy config has no MoE intermediate size")?,
            );
            let _ = write!(
                out,
                r#"_FUSED_KEY = re.compile(r"^(.+)\.experts\.(gate_up_proj|down_proj)$")


class {class}:
    """Transposes fused expert tensors stored [E, H, 2*I] / [E, I, H] into [E, 2*I, H] / [E, H, I].

    A square expert (hidden_size == 2 * intermediate for gate_up_proj, hidden_size == intermediate for
    down_proj) cannot be told by shape: it raises (convert it offline with
    `patchgen moe convert --source-layout`), never guesses.
    """

    def __init__(self, num_experts, hidden_size, intermediate_size):
        self.num_experts = num_experts
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size

    def can_handle(self, name):
        return _FUSED_KEY.match(name) is not None or _rename(name) != name

    def convert(self, name, tensor):
        match = _FUSED_KEY.match(name)
        if match is None:
            return ConvertedCheckpointTensor(name=_rename(name), tensor=tensor)
        h, i = self.hidden_size, self.intermediate_size
        stored, fused = ((h, 2 * i), (2 * i, h)) if match.group(2) == "gate_up_proj" else ((i, h), (h, i))
        shape = tuple(tensor.shape)
        if len(shape) != 3 or shape[0] != self.num_experts:
            raise RuntimeError(f"{prefix} checkpoint converter: {{name}} {{shape}}: expected 3-D with dim 0 == {{self.num_experts}}")
        if stored == fused:
            raise RuntimeError(
                f"{prefix} checkpoint converter: {{name}} {{shape}}: the stored and fused layouts have the same shape; "
                "convert the checkpoint with `patchgen moe convert --source-layout fused|transposed`"
            )
        if shape[1:] == stored:
            tensor = tensor.transpose(1, 2).contiguous()
        elif shape[1:] != fused:
            raise RuntimeError(f"{prefix} checkpoint converter: {{name}} {{shape}}: neither {{stored}} nor {{fused}} per expert")
        return ConvertedCheckpointTensor(name=_rename(name), tensor=tensor)

    def finalize(self):
        return []


def {create}(model):
    """Registered on the model classes as ``_create_checkpoint_tensor_converter`` (__init__.py)."""
    return {class}(
        num_experts={experts},
        hidden_size={hidden},
        intermediate_size={inter},
    )


def {fqn}(fqn_to_index_mapping):
    """The checkpoint index's keys as the converter emits them (names kept, renamings applied)."""
    return {{_rename(name): index for name, index in fqn_to_index_mapping.items()}}
"#,
                prefix = spec.prefix,
                experts = config_attr(spec.dims, experts_key),
            );
        }
    }
    Ok(out)
}

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
