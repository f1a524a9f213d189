//! Which checkpoint-conversion recipe an upstream `transformers` version
//! applies to a `model_type`, read statically from its
//! `transformers/conversion_mapping.py` (never imported or executed).
//!
//! The file builds one dict in `_build_checkpoint_conversion_mapping()`;
//! this module replays what that function does, statement by statement:
//! 1. the literal `mapping = {key: [WeightConverter(...), WeightRenaming(...), ...]}`;
//! 2. the imperative statements after it: `mapping[x] = mapping[y].copy()`,
//!    `mapping[x] = mapping[y].copy() + [...]`, `mapping[x] = [...]` and
//!    `mapping[x] += ...` (a comprehension or a call we do not model becomes
//!    an opaque item: it never decides the expert layout);
//! 3. the alias fill `for model_type, base_pattern in
//!    _MODEL_TO_CONVERSION_PATTERN.items(): if model_type in mapping:
//!    continue; mapping[model_type] = mapping[base_pattern].copy()` at the
//!    point where the loop stands.
//!
//! A recipe is then classified by what it does to *routed experts* (items
//! whose target pattern names `experts`, not `shared_experts`):
//! - [`RecipeKind::PerExpert`]: a `WeightConverter` with `MergeModulelist`
//!   (the checkpoint stores `experts.{j}.gate_proj/up_proj/down_proj` or
//!   `w1/w3/w2`; HF stacks them at load);
//! - [`RecipeKind::FusedTransposed`]: a `WeightConverter` with `Transpose`
//!   (the checkpoint stores `[E,H,2I]`/`[E,I,H]`, qwen3_vl_moe);
//! - [`RecipeKind::Other`]: any other conversion touching experts
//!   (interleave, pre-stacked concatenation, pure renames);
//! - [`RecipeKind::Direct`]: no recipe, or one that leaves experts alone:
//!   the checkpoint is expected in the in-memory (v5 fused) layout.
//!
//! API used by `moe inspect` and lint rule PG401:
//! - [`Recipes::parse`] (text + origin for messages) or [`Recipes::load`]
//!   (a [`SearchPath`] holding the upstream: a wheel or a directory);
//! - [`Recipes::checkpoint_layout_need`]`(model_type) -> RecipeKind`;
//! - [`Recipes::recipe`]`(model_type) -> Option<&Recipe>` for the details
//!   (the alias it came through, the converters and their line numbers).
//!
//! Whether a generated modeling module has fused expert parameters is
//! [`super::modeling::fused_expert_classes`]`(text)`; whether a model
//! package's `__init__.py` registers a converter is
//! [`super::inspect::assigns_converter`]`(text)`.
//!
//! ```ignore
//! let recipes = Recipes::load(&SearchPath::new(vec![wheel]))?;
//! match recipes.checkpoint_layout_need("glm_moe_dsa") {
//!     RecipeKind::PerExpert { .. } | RecipeKind::FusedTransposed => { /* a fused class needs a converter */ }
//!     RecipeKind::Other { .. } | RecipeKind::Direct => {}
//! }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use ruff_python_ast::{Expr, Operator, Stmt};
use ruff_text_size::Ranged;
use serde::Serialize;

use patchgen_core::upstream::SearchPath;
use patchgen_python::semantic::facts;

/// The module holding the recipes, relative to the upstream's root.
pub const MODULE: &str = "transformers.conversion_mapping";

/// How expert keys are named on disk in a per-expert recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpertNaming {
    /// `experts.{j}.gate_proj/up_proj/down_proj`.
    GateUpDown,
    /// `experts.{j}.w1/w3/w2` (mixtral: w1 = gate, w3 = up, w2 = down).
    W1W3W2,
    /// `experts.{j}.up_proj/down_proj`, no gate (nemotron_h).
    UpDown,
}

/// What a recipe expects the checkpoint's routed experts to look like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecipeKind {
    /// Per-expert split keys, stacked (and gate/up concatenated) at load.
    PerExpert { naming: ExpertNaming },
    /// Fused but transposed (`[E,H,2I]`, `[E,I,H]`), transposed at load.
    FusedTransposed,
    /// Another conversion of the experts (named by its operations).
    Other { what: String },
    /// Nothing converts the experts: the checkpoint must already match the
    /// model's parameters.
    Direct,
}

impl RecipeKind {
    /// The checkpoint's routed experts are not in the fused in-memory layout
    /// (per-expert or transposed): a class with fused expert parameters
    /// needs a checkpoint converter. The one decision shared by lint rule
    /// PG401 and `patchgen new`.
    pub fn needs_conversion(&self) -> bool {
        matches!(self, RecipeKind::PerExpert { .. } | RecipeKind::FusedTransposed)
    }

    /// Short label for reports.
    pub fn label(&self) -> String {
        match self {
            RecipeKind::PerExpert { naming: ExpertNaming::GateUpDown } => {
                "per-expert (gate_proj/up_proj/down_proj)".into()
            }
            RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 } => "per-expert (w1/w3/w2)".into(),
            RecipeKind::PerExpert { naming: ExpertNaming::UpDown } => "per-expert (up_proj/down_proj)".into(),
            RecipeKind::FusedTransposed => "fused-transposed".into(),
            RecipeKind::Other { what } => format!("other ({what})"),
            RecipeKind::Direct => "none (direct)".into(),
        }
    }
}

/// One element of a recipe list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum Item {
    /// `WeightConverter(source_patterns, target_patterns, operations=[...])`.
    Converter { sources: Vec<String>, targets: Vec<String>, operations: Vec<String>, line: usize },
    /// `WeightRenaming(source, target)` (also `PrefixChange`, which has no
    /// patterns we need).
    Renaming { class: String, sources: Vec<String>, targets: Vec<String>, line: usize },
    /// Anything else (a comprehension, an unknown call).
    Opaque { what: String, line: usize },
}

/// One key's recipe after the whole build function ran.
#[derive(Clone, Debug, Serialize)]
pub struct Recipe {
    pub items: Vec<Item>,
    /// Set when the key was filled from `_MODEL_TO_CONVERSION_PATTERN`.
    pub alias_of: Option<String>,
}

impl Recipe {
    /// What this recipe does to routed experts.
    pub fn kind(&self) -> RecipeKind {
        classify(&self.items)
    }

    /// The recipe's `WeightRenaming`s as plain substring replacements
    /// (mixtral's `".block_sparse_moe."` → `".mlp."`), in order. `Err`
    /// names a renaming whose patterns are regular expressions (anchors,
    /// groups, wildcards): replaying those is not attempted.
    pub fn plain_renamings(&self) -> Result<Vec<(String, String)>, NotPlain> {
        let plain = |s: &str| !s.contains(['^', '$', '(', ')', '[', ']', '{', '}', '*', '?', '+', '|', '\\']);
        let mut out = Vec::new();
        for item in &self.items {
            if let Item::Renaming { class, sources, targets, line } = item {
                match (sources.as_slice(), targets.as_slice()) {
                    ([s], [t]) if class == "WeightRenaming" && plain(s) && plain(t) => out.push((s.clone(), t.clone())),
                    _ => {
                        return Err(NotPlain {
                            class: class.clone(),
                            line: *line,
                            sources: sources.clone(),
                            targets: targets.clone(),
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A renaming of a recipe that is not a plain substring replacement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{class} at line {line} ({sources:?} -> {targets:?})")]
pub struct NotPlain {
    pub class: String,
    pub line: usize,
    pub sources: Vec<String>,
    pub targets: Vec<String>,
}

/// Every recipe of one upstream version.
#[derive(Clone, Debug, Serialize)]
pub struct Recipes {
    /// Where the file was read from (`wheel!transformers/conversion_mapping.py`).
    pub origin: PathBuf,
    pub mapping: BTreeMap<String, Recipe>,
    /// `_MODEL_TO_CONVERSION_PATTERN` as written.
    pub aliases: BTreeMap<String, String>,
    /// Statements of the build function that were not understood (line, text
    /// head): reported, never guessed at.
    pub skipped: Vec<(usize, String)>,
}

/// Why the recipes of a version could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipeError {
    pub origin: PathBuf,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for RecipeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.origin.display(), self.line, self.message)
        } else {
            write!(f, "{}: {}", self.origin.display(), self.message)
        }
    }
}

impl Recipes {
    /// Read `transformers/conversion_mapping.py` from an upstream.
    pub fn load(search: &SearchPath) -> Result<Recipes, RecipeError> {
        let source = search.find_module(MODULE).map_err(|e| RecipeError {
            origin: PathBuf::from("transformers/conversion_mapping.py"),
            line: 0,
            message: format!(
                "{e}\n  help: transformers < 5 has no conversion_mapping.py: every model type loads directly"
            ),
        })?;
        Recipes::parse(source.origin, &source.text)
    }

    /// Parse the text of a `conversion_mapping.py`.
    pub fn parse(origin: PathBuf, text: &str) -> Result<Recipes, RecipeError> {
        let index = patchgen_diagnostics::LineIndex::new(text);
        let line_of = |offset: usize| index.line_of(offset);
        let err = |line: usize, message: String| RecipeError { origin: origin.clone(), line, message };
        let parsed = ruff_python_parser::parse_module(text)
            .map_err(|e| err(line_of(e.location.start().into()), format!("not valid Python: {}", e.error)))?;
        let body = &parsed.syntax().body;

        let mut aliases = BTreeMap::new();
        let mut alias_order = Vec::new();
        for stmt in body {
            let Some((target, value)) = facts::one_target_assignment(stmt) else { continue };
            if !matches!(target, Expr::Name(n) if n.id.as_str() == "_MODEL_TO_CONVERSION_PATTERN") {
                continue;
            }
            let Expr::Dict(d) = value else {
                return Err(err(
                    line_of(value.start().into()),
                    "_MODEL_TO_CONVERSION_PATTERN is not a dict literal".into(),
                ));
            };
            for item in &d.items {
                if let (Some(Expr::StringLiteral(k)), Expr::StringLiteral(v)) = (&item.key, &item.value) {
                    let k = k.value.to_str().to_string();
                    if !aliases.contains_key(&k) {
                        alias_order.push(k.clone());
                    }
                    aliases.insert(k, v.value.to_str().to_string());
                }
            }
        }

        let build = body.iter().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.id.as_str() == "_build_checkpoint_conversion_mapping" => Some(f),
            _ => None,
        });
        let Some(build) = build else {
            return Err(err(
                0,
                "no function `_build_checkpoint_conversion_mapping` (an unknown version of the file)".into(),
            ));
        };

        let mut ev = Eval { line_of: &line_of, mapping: BTreeMap::new(), skipped: Vec::new(), started: false };
        for stmt in &build.body {
            ev.statement(stmt, &aliases, &alias_order, text);
        }
        if !ev.started {
            return Err(err(
                line_of(build.start().into()),
                "`_build_checkpoint_conversion_mapping` builds no `mapping = {...}`".into(),
            ));
        }
        Ok(Recipes { origin, mapping: ev.mapping, aliases, skipped: ev.skipped })
    }

    /// The recipe registered under `key` (a `model_type` or a class name).
    pub fn recipe(&self, key: &str) -> Option<&Recipe> {
        self.mapping.get(key)
    }

    /// What the checkpoint of `model_type` must look like for this version
    /// to load it: the recipe's kind, or [`RecipeKind::Direct`] without one.
    pub fn checkpoint_layout_need(&self, model_type: &str) -> RecipeKind {
        self.recipe(model_type).map_or(RecipeKind::Direct, Recipe::kind)
    }
}

/// The state of `_build_checkpoint_conversion_mapping` while it is replayed.
struct Eval<'a> {
    line_of: &'a dyn Fn(usize) -> usize,
    mapping: BTreeMap<String, Recipe>,
    skipped: Vec<(usize, String)>,
    started: bool,
}

impl Eval<'_> {
    fn line(&self, e: &impl Ranged) -> usize {
        (self.line_of)(e.start().into())
    }

    fn skip(&mut self, stmt: &Stmt, text: &str) {
        let start: usize = stmt.start().into();
        let end: usize = stmt.end().into();
        let head = text[start..end].lines().next().unwrap_or("").chars().take(80).collect();
        self.skipped.push((self.line(stmt), head));
    }

    fn statement(&mut self, stmt: &Stmt, aliases: &BTreeMap<String, String>, order: &[String], text: &str) {
        match stmt {
            Stmt::Assign(a) if a.targets.len() == 1 => {
                let target = &a.targets[0];
                if let Expr::Name(n) = target
                    && n.id.as_str() == "mapping"
                {
                    if let Expr::Dict(d) = &*a.value {
                        self.started = true;
                        self.mapping.clear();
                        for item in &d.items {
                            match &item.key {
                                Some(Expr::StringLiteral(k)) => {
                                    let items = self.value(&item.value);
                                    self.mapping.insert(k.value.to_str().to_string(), Recipe { items, alias_of: None });
                                }
                                _ => {
                                    self.skipped.push((self.line(&item.value), "a non-literal key in the dict".into()))
                                }
                            }
                        }
                    } else {
                        self.skip(stmt, text);
                    }
                    return;
                }
                match mapping_key(target) {
                    Some(key) => {
                        let items = self.value(&a.value);
                        self.mapping.insert(key, Recipe { items, alias_of: None });
                    }
                    None => self.skip(stmt, text),
                }
            }
            Stmt::AugAssign(a) if a.op == Operator::Add => match mapping_key(&a.target) {
                Some(key) => {
                    let items = self.value(&a.value);
                    self.mapping.entry(key).or_insert(Recipe { items: Vec::new(), alias_of: None }).items.extend(items);
                }
                None => self.skip(stmt, text),
            },
            Stmt::For(f) if is_alias_loop(&f.iter) => {
                for model_type in order {
                    if self.mapping.contains_key(model_type) {
                        continue;
                    }
                    let base = &aliases[model_type];
                    if let Some(r) = self.mapping.get(base) {
                        let items = r.items.clone();
                        self.mapping.insert(model_type.clone(), Recipe { items, alias_of: Some(base.clone()) });
                    }
                }
            }
            Stmt::Return(_) | Stmt::Expr(_) => {}
            _ => self.skip(stmt, text),
        }
    }

    /// The list an expression evaluates to.
    fn value(&self, e: &Expr) -> Vec<Item> {
        match e {
            Expr::List(l) => l.elts.iter().map(|x| self.item(x)).collect(),
            Expr::Tuple(t) => t.elts.iter().map(|x| self.item(x)).collect(),
            Expr::BinOp(b) if b.op == Operator::Add => {
                let mut v = self.value(&b.left);
                v.extend(self.value(&b.right));
                v
            }
            Expr::Subscript(_) => match mapping_key(e) {
                Some(k) => self.mapping.get(&k).map(|r| r.items.clone()).unwrap_or_default(),
                None => vec![Item::Opaque { what: "subscript".into(), line: self.line(e) }],
            },
            // `x.copy()`, `deepcopy(x)`, `list(x)`: the same items.
            Expr::Call(c) if c.arguments.args.is_empty() && c.arguments.keywords.is_empty() => match &*c.func {
                Expr::Attribute(a) if a.attr.as_str() == "copy" => self.value(&a.value),
                _ => vec![Item::Opaque { what: "call".into(), line: self.line(e) }],
            },
            Expr::Call(c)
                if c.arguments.args.len() == 1
                    && c.arguments.keywords.is_empty()
                    && matches!(&*c.func, Expr::Name(n) if matches!(n.id.as_str(), "deepcopy" | "list" | "copy")) =>
            {
                self.value(&c.arguments.args[0])
            }
            Expr::ListComp(_) => vec![Item::Opaque { what: "comprehension".into(), line: self.line(e) }],
            _ => vec![Item::Opaque { what: "expression".into(), line: self.line(e) }],
        }
    }

    /// One list element.
    fn item(&self, e: &Expr) -> Item {
        let line = self.line(e);
        let Expr::Call(c) = e else {
            return Item::Opaque { what: "element".into(), line };
        };
        let class = callee_name(&c.func).unwrap_or_default();
        let arg = |pos: usize, name: &str| {
            c.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
                .map(|k| &k.value)
                .or_else(|| c.arguments.args.get(pos))
        };
        let strings = |e: Option<&Expr>| -> Vec<String> {
            match e {
                Some(Expr::StringLiteral(s)) => vec![s.value.to_str().to_string()],
                Some(Expr::List(l)) => l.elts.iter().filter_map(string_literal).collect(),
                Some(Expr::Tuple(t)) => t.elts.iter().filter_map(string_literal).collect(),
                _ => Vec::new(),
            }
        };
        match class.as_str() {
            "WeightConverter" => {
                let operations = match arg(2, "operations") {
                    Some(Expr::List(l)) => l.elts.iter().map(op_name).collect(),
                    Some(Expr::Tuple(t)) => t.elts.iter().map(op_name).collect(),
                    Some(_) => vec!["?".into()],
                    None => Vec::new(),
                };
                Item::Converter {
                    sources: strings(arg(0, "source_patterns")),
                    targets: strings(arg(1, "target_patterns")),
                    operations,
                    line,
                }
            }
            "WeightRenaming" | "PrefixChange" | "GroupWeightRename" => Item::Renaming {
                sources: strings(arg(0, "source_patterns")),
                targets: strings(arg(1, "target_patterns")),
                class,
                line,
            },
            _ => Item::Opaque { what: class, line },
        }
    }
}

fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

/// `Foo` of `Foo(...)` or `mod.Foo(...)`.
fn callee_name(func: &Expr) -> Option<String> {
    match func {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(a.attr.to_string()),
        _ => None,
    }
}

fn op_name(e: &Expr) -> String {
    match e {
        Expr::Call(c) => callee_name(&c.func).unwrap_or_else(|| "?".into()),
        other => callee_name(other).unwrap_or_else(|| "?".into()),
    }
}

/// `"k"` of `mapping["k"]`.
fn mapping_key(e: &Expr) -> Option<String> {
    let Expr::Subscript(s) = e else { return None };
    if !matches!(&*s.value, Expr::Name(n) if n.id.as_str() == "mapping") {
        return None;
    }
    string_literal(&s.slice)
}

/// `_MODEL_TO_CONVERSION_PATTERN.items()`.
fn is_alias_loop(iter: &Expr) -> bool {
    let Expr::Call(c) = iter else { return false };
    let Expr::Attribute(a) = &*c.func else {
        return false;
    };
    a.attr.as_str() == "items" && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "_MODEL_TO_CONVERSION_PATTERN")
}

/// A pattern naming routed experts (`experts`, not `shared_experts`).
pub fn names_routed_experts(pattern: &str) -> bool {
    pattern.match_indices("experts").any(|(i, _)| !pattern[..i].ends_with('_'))
}

/// What a recipe's items do to routed experts (see the module doc).
pub fn classify(items: &[Item]) -> RecipeKind {
    let mut transposed = false;
    let mut other: Vec<String> = Vec::new();
    for item in items {
        match item {
            Item::Converter { sources, targets, operations, .. } if targets.iter().any(|t| names_routed_experts(t)) => {
                if operations.iter().any(|o| o == "MergeModulelist") {
                    let has = |n: &str| sources.iter().any(|s| s.contains(n));
                    let naming = if has(".w1") || has(".w3") || has(".w2") {
                        ExpertNaming::W1W3W2
                    } else if has("gate_proj") {
                        ExpertNaming::GateUpDown
                    } else {
                        ExpertNaming::UpDown
                    };
                    // A recipe's gate/up converter decides the naming; a
                    // down-only converter is consistent with it.
                    let gate_up = items.iter().find_map(|i| match i {
                        Item::Converter { sources, targets, operations, .. }
                            if operations.iter().any(|o| o == "MergeModulelist")
                                && targets.iter().any(|t| names_routed_experts(t))
                                && sources.iter().any(|s| s.contains("gate_proj") || s.contains(".w1")) =>
                        {
                            Some(if sources.iter().any(|s| s.contains(".w1")) {
                                ExpertNaming::W1W3W2
                            } else {
                                ExpertNaming::GateUpDown
                            })
                        }
                        _ => None,
                    });
                    return RecipeKind::PerExpert { naming: gate_up.unwrap_or(naming) };
                }
                if operations.iter().any(|o| o == "Transpose") {
                    transposed = true;
                } else {
                    let what = if operations.is_empty() { "WeightConverter".to_string() } else { operations.join("+") };
                    if !other.contains(&what) {
                        other.push(what);
                    }
                }
            }
            Item::Renaming { class, targets, .. } if targets.iter().any(|t| names_routed_experts(t)) => {
                let what = format!("{class} to experts");
                if !other.contains(&what) {
                    other.push(what);
                }
            }
            _ => {}
        }
    }
    if transposed {
        RecipeKind::FusedTransposed
    } else if !other.is_empty() {
        RecipeKind::Other { what: other.join(", ") }
    } else {
        RecipeKind::Direct
    }
}

#[cfg(test)]
#[path = "recipes_tests.rs"]
mod tests;
