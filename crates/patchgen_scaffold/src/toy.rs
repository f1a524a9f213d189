//! The toy `config.json` of a new model, shrunk from the upstream
//! configuration's defaults (protocol Phase 6.1): few layers but the whole
//! layer-type pattern kept, small dims and heads, a small vocabulary unless
//! special token ids need a large one, few experts with MoE dims pairwise
//! distinct (`hidden != 2*I`, `hidden != I`: square per-expert matrices make
//! the checkpoint layout undecidable by shape). Sub-configs are shrunk the
//! same way (vision towers: two blocks). Every change is listed for the
//! README.

use serde_json::{Map, Value};

use super::configuration::{ConfigClass, ConfigurationModule};

pub const HIDDEN: i64 = 64;
pub const INTERMEDIATE: i64 = 128;
pub const MOE_INTERMEDIATE: i64 = 48;
pub const SHARED_INTERMEDIATE: i64 = 80;
pub const EXPERTS: i64 = 4;

/// One README bullet: `- **field**: old → new (reason)`.
#[derive(Clone, Debug)]
pub struct Change {
    pub field: String,
    pub old: Value,
    pub new: Value,
    pub reason: String,
}

pub struct Toy {
    pub config: Value,
    pub changes: Vec<Change>,
}

/// Layers that show every layer-type pattern once: the longest period the
/// configuration hints at (full-attention interval, sliding-window pattern,
/// sparse step, dense prefix + 1), at least 2.
fn layers(class: &ConfigClass) -> (i64, String) {
    let mut best = (2, "two layers".to_string());
    let hints: [(&str, i64, &str); 6] = [
        ("full_attention_interval", 0, "one full linear/full-attention pattern"),
        ("sliding_window_pattern", 0, "one full sliding/full-attention pattern"),
        ("_sliding_window_pattern", 0, "one full sliding/full-attention pattern"),
        ("decoder_sparse_step", 0, "dense and sparse layers both appear"),
        ("interleave_moe_layer_step", 0, "dense and sparse layers both appear"),
        ("first_k_dense_replace", 1, "dense and sparse layers both appear"),
    ];
    for (name, plus, why) in hints {
        if let Some(n) = class.get(name).and_then(|f| f.value.as_i64()) {
            let n = if name == "first_k_dense_replace" { 1 + plus } else { n + plus };
            if n > best.0 && n <= 16 {
                best = (n, format!("{why} ({name})"));
            }
        }
    }
    best
}

fn set(obj: &mut Map<String, Value>, changes: &mut Vec<Change>, path: &str, field: &str, new: Value, reason: &str) {
    let Some(old) = obj.get(field).cloned() else {
        return;
    };
    if old == new || old.is_null() {
        return;
    }
    obj.insert(field.to_string(), new.clone());
    changes.push(Change { field: format!("{path}{field}"), old, new, reason: reason.to_string() });
}

/// [`set`], and also where the default is `None`: an MoE count the upstream
/// leaves unset (dots1's `n_routed_experts: int | None = None`) must be a
/// concrete value in a toy config, or the model cannot be built and nothing
/// (converter, EP plan, tests) knows the experts count.
fn set_required(
    obj: &mut Map<String, Value>,
    changes: &mut Vec<Change>,
    path: &str,
    field: &str,
    new: Value,
    reason: &str,
) {
    if obj.get(field).is_some_and(Value::is_null) {
        obj.insert(field.to_string(), new.clone());
        changes.push(Change {
            field: format!("{path}{field}"),
            old: Value::Null,
            new,
            reason: format!("{reason}; the default is None, a toy config needs a concrete value"),
        });
    } else {
        set(obj, changes, path, field, new, reason);
    }
}

/// The experts-count keys (`moe::config::MoeDims` reads the same ones).
const EXPERTS_KEYS: [&str; 4] = ["num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"];
/// The routed top-k keys (at most the toy's experts count).
const TOP_K_KEYS: [&str; 5] = ["num_experts_per_tok", "moe_topk", "moe_k", "top_k_experts", "moe_top_k"];

/// The largest `*_token_id` default (a vocabulary must cover it).
fn max_token_id(obj: &Map<String, Value>) -> i64 {
    obj.iter()
        .filter(|(k, _)| k.ends_with("token_id") || k.ends_with("token_index"))
        .filter_map(|(_, v)| v.as_i64())
        .max()
        .unwrap_or(0)
}

/// A configuration class shrunk, with its sub-configs.
struct Shrinker<'a> {
    module: &'a ConfigurationModule,
    /// The model was categorised as MoE (see [`toy_config`]).
    moe_category: bool,
    changes: Vec<Change>,
}

/// One config object being shrunk, and its path in the README
/// (`text_config.`).
struct Fields<'a> {
    obj: Map<String, Value>,
    path: &'a str,
    changes: &'a mut Vec<Change>,
}

impl Fields<'_> {
    fn set(&mut self, field: &str, new: Value, reason: &str) {
        set(&mut self.obj, self.changes, self.path, field, new, reason);
    }

    fn set_required(&mut self, field: &str, new: Value, reason: &str) {
        set_required(&mut self.obj, self.changes, self.path, field, new, reason);
    }

    fn int(&self, field: &str) -> Option<i64> {
        self.obj.get(field).and_then(Value::as_i64)
    }
}

impl Shrinker<'_> {
    fn shrink(&mut self, class: &ConfigClass, path: &str, vision: bool, depth: usize) -> Map<String, Value> {
        let mut obj = defaults(class);
        self.shrink_sub_configs(class, path, depth, &mut obj);
        // An MoE config: an integer experts count, or (for a model `new`
        // categorised as MoE) an experts-count key whose default is None.
        let moe = EXPERTS_KEYS
            .iter()
            .any(|k| obj.get(*k).is_some_and(|v| v.as_i64().is_some() || (self.moe_category && v.is_null())));
        let mut f = Fields { obj, path, changes: &mut self.changes };
        if vision {
            shrink_vision(&mut f);
        } else {
            shrink_text(&mut f, class, moe);
        }
        f.obj
    }

    /// Sub-configs (three levels deep at most), vision and audio towers as such.
    fn shrink_sub_configs(&mut self, class: &ConfigClass, path: &str, depth: usize, obj: &mut Map<String, Value>) {
        for (key, sub) in &class.sub_configs {
            if depth > 3 {
                break;
            }
            let Some(sub_class) = self.module.class(sub) else {
                continue;
            };
            let is_vision = key.contains("vision") || key.contains("audio") || key.contains("visual");
            let inner = self.shrink(sub_class, &format!("{path}{key}."), is_vision, depth + 1);
            obj.insert(key.clone(), Value::Object(inner));
        }
    }
}

/// The class's defaults (public fields and `setdefault`s) and `model_type`.
fn defaults(class: &ConfigClass) -> Map<String, Value> {
    let mut obj = Map::new();
    for f in class.fields.iter().chain(class.setdefaults.iter()) {
        if !obj.contains_key(&f.name) && !f.name.starts_with('_') {
            obj.insert(f.name.clone(), f.value.clone());
        }
    }
    if let Some(t) = &class.model_type {
        obj.insert("model_type".into(), Value::String(t.clone()));
    }
    obj
}

/// A vision or audio tower: two blocks, small dims, the text hidden size out.
fn shrink_vision(f: &mut Fields<'_>) {
    f.set("depth", Value::from(2), "two blocks");
    f.set("num_hidden_layers", Value::from(2), "two blocks");
    f.set("encoder_layers", Value::from(2), "two blocks");
    f.set("hidden_size", Value::from(HIDDEN), "small");
    f.set("embed_dim", Value::from(HIDDEN), "small");
    f.set("d_model", Value::from(HIDDEN), "small");
    f.set("num_heads", Value::from(4), "small");
    f.set("num_attention_heads", Value::from(4), "small");
    f.set("encoder_attention_heads", Value::from(4), "small");
    f.set("intermediate_size", Value::from(INTERMEDIATE), "small");
    f.set("encoder_ffn_dim", Value::from(INTERMEDIATE), "small");
    f.set("out_hidden_size", Value::from(HIDDEN), "the text hidden size");
    f.set("output_dim", Value::from(HIDDEN), "the text hidden size");
    let keys: Vec<String> =
        f.obj.keys().filter(|k| k.ends_with("_indexes") || k.ends_with("_indices")).cloned().collect();
    for k in keys {
        if let Some(a) = f.obj.get(&k).and_then(|v| v.as_array()).filter(|a| !a.is_empty()) {
            let n = a.len().min(2);
            let new: Vec<Value> = (0..n as i64).map(|i| Value::from(i + 2 - n as i64)).collect();
            f.set(&k, Value::Array(new), "indexes inside the two blocks");
        }
    }
}

/// A text config: layers that keep the layer pattern, small attention,
/// MoE dims pairwise distinct, few experts, a tiny vocabulary.
fn shrink_text(f: &mut Fields<'_>, class: &ConfigClass, moe: bool) {
    let n_layers = shrink_layers_and_attention(f, class);
    shrink_mlp_dims(f, moe);
    shrink_experts(f, moe);
    f.set("kv_lora_rank", Value::from(32), "small");
    f.set("q_lora_rank", Value::from(48), "small");
    f.set("qk_rope_head_dim", Value::from(8), "small");
    f.set("qk_nope_head_dim", Value::from(16), "small");
    f.set("v_head_dim", Value::from(16), "small");
    f.set("linear_key_head_dim", Value::from(16), "small");
    f.set("linear_value_head_dim", Value::from(16), "small");
    f.set("linear_num_key_heads", Value::from(2), "small");
    f.set("linear_num_value_heads", Value::from(4), "small");
    if f.int("max_window_layers").is_some_and(|m| m > n_layers) {
        f.set("max_window_layers", Value::from(n_layers), "no more than the layers");
    }
    if let Some(Value::Array(types)) = f.obj.get("layer_types").cloned()
        && types.len() as i64 > n_layers
    {
        f.set("layer_types", Value::Array(types[..n_layers as usize].to_vec()), "the first layers' types");
    }
    if max_token_id(&f.obj) < 1024 {
        f.set("vocab_size", Value::from(1024), "tiny vocabulary");
    }
}

/// The layers ([`layers`]), the hidden size and heads (grouped-query
/// attention kept). Returns the layers.
fn shrink_layers_and_attention(f: &mut Fields<'_>, class: &ConfigClass) -> i64 {
    let (n_layers, why) = layers(class);
    let heads_before = f.int("num_attention_heads");
    let kv_before = f.int("num_key_value_heads");
    f.set("num_hidden_layers", Value::from(n_layers), &why);
    f.set("hidden_size", Value::from(HIDDEN), "small");
    f.set("num_attention_heads", Value::from(4), "small");
    let kv = match (heads_before, kv_before) {
        (Some(h), Some(k)) if k < h => 2,
        _ => 4,
    };
    f.set("num_key_value_heads", Value::from(kv), if kv == 2 { "grouped-query attention kept" } else { "small" });
    f.set("head_dim", Value::from(HIDDEN / 4), "hidden_size / num_attention_heads");
    n_layers
}

/// The MLP sizes, pairwise distinct (the dense one is the expert size
/// when the config has no separate MoE size).
fn shrink_mlp_dims(f: &mut Fields<'_>, moe: bool) {
    let dense_is_expert = moe && f.obj.get("moe_intermediate_size").is_none();
    f.set(
        "intermediate_size",
        Value::from(if dense_is_expert { MOE_INTERMEDIATE } else { INTERMEDIATE }),
        if dense_is_expert { "expert size: hidden != 2*I and hidden != I" } else { "small" },
    );
    f.set(
        "moe_intermediate_size",
        Value::from(MOE_INTERMEDIATE),
        "hidden != 2*I and hidden != I (layout decidable by shape)",
    );
    f.set("shared_expert_intermediate_size", Value::from(SHARED_INTERMEDIATE), "distinct from the other dims");
}

/// Few experts, top-2 routing, one shared expert and one expert group;
/// counts the upstream leaves None set when the model is MoE.
fn shrink_experts(f: &mut Fields<'_>, moe: bool) {
    for k in EXPERTS_KEYS {
        if moe {
            f.set_required(k, Value::from(EXPERTS), "few experts");
        } else {
            f.set(k, Value::from(EXPERTS), "few experts");
        }
    }
    for k in TOP_K_KEYS {
        // Top-2 of the few experts; a top-1 router stays top-1.
        if f.int(k).is_some_and(|n| n <= 2) {
            continue;
        }
        if moe {
            f.set_required(k, Value::from(2), "top-2 of the few experts");
        } else {
            f.set(k, Value::from(2), "top-2 of the few experts");
        }
    }
    if moe {
        // A shared-experts count the upstream leaves None (dots1 multiplies
        // `moe_intermediate_size * n_shared_experts`); a set one is kept.
        for k in ["n_shared_experts", "num_shared_experts", "moe_num_shared_experts"] {
            if f.obj.get(k).is_some_and(Value::is_null) {
                f.set_required(k, Value::from(1), "one shared expert");
            }
        }
    }
    f.set("n_group", Value::from(1), "one expert group");
    f.set("topk_group", Value::from(1), "one expert group");
    f.set("first_k_dense_replace", Value::from(1), "one dense layer, then sparse ones");
}

/// The toy config of a configuration class, with `architectures`.
///
/// `moe_category`: the model was categorised as MoE (experts classes
/// upstream); then experts counts, top-k and shared-experts counts whose
/// default is None are set too (and listed in the README).
pub fn toy_config(module: &ConfigurationModule, main: &ConfigClass, architecture: &str, moe_category: bool) -> Toy {
    let mut shrinker = Shrinker { module, moe_category, changes: Vec::new() };
    let mut obj = shrinker.shrink(main, "", false, 0);
    let mut changes = shrinker.changes;
    // Top-level token ids must fit the (unshrunk) text vocabulary.
    if let Some(Value::Object(text)) = obj.get("text_config")
        && max_token_id(&obj) >= 1024
        && text.get("vocab_size").and_then(|v| v.as_i64()) == Some(1024)
    {
        let mut text = text.clone();
        let original = module
            .class(main.sub_configs.iter().find(|(k, _)| k == "text_config").map(|(_, c)| c.as_str()).unwrap_or(""))
            .and_then(|c| c.get("vocab_size"))
            .map(|f| f.value.clone());
        if let Some(v) = original {
            text.insert("vocab_size".into(), v);
            changes.retain(|c| c.field != "text_config.vocab_size");
        }
        obj.insert("text_config".into(), Value::Object(text));
    }
    obj.insert("architectures".into(), Value::Array(vec![Value::String(architecture.into())]));
    Toy { config: Value::Object(obj), changes }
}

/// `json.dumps(config, indent=2, sort_keys=True)` shape, with a final newline.
pub fn config_json(toy: &Toy) -> String {
    let mut s = serde_json::to_string_pretty(&toy.config).unwrap_or_default();
    s.push('\n');
    s
}

/// The README next to the toy config.
pub fn readme(hf_name: &str, class: &str, origin: &str, version: &str, toy: &Toy) -> String {
    let mut out = format!(
        "# {hf_name} toy config\n\nBased on the defaults of `{class}` in transformers {version} (`{origin}`), not on a released checkpoint; compare with the checkpoint you train before relying on it.\n\nChanges from the original config to make it test-friendly:\n\n"
    );
    for c in &toy.changes {
        out.push_str(&format!("- **{}**: {} → {} ({})\n", c.field, c.old, c.new, c.reason));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moe_dims_are_pairwise_distinct_and_patterns_kept() {
        let src = "class MConfig(PreTrainedConfig):\n    model_type = \"m\"\n    hidden_size: int = 2048\n    moe_intermediate_size: int = 1024\n    intermediate_size: int = 6144\n    num_experts: int = 128\n    num_hidden_layers: int = 48\n    num_attention_heads: int = 32\n    num_key_value_heads: int = 4\n    vocab_size: int = 151936\n    def __post_init__(self, **kwargs):\n        kwargs.pop(\"full_attention_interval\", 4)\n";
        let m = ConfigurationModule::parse("c.py".into(), src).unwrap();
        let toy = toy_config(&m, m.class("MConfig").unwrap(), "MForCausalLM", true);
        let c = &toy.config;
        let (h, i) = (c["hidden_size"].as_i64().unwrap(), c["moe_intermediate_size"].as_i64().unwrap());
        assert!(h != 2 * i && h != i && i != c["intermediate_size"].as_i64().unwrap());
        assert_eq!(c["num_hidden_layers"], 4);
        assert_eq!(c["num_key_value_heads"], 2);
        assert_eq!(c["vocab_size"], 1024);
        assert_eq!(c["architectures"][0], "MForCausalLM");
        assert!(readme("m", "MConfig", "x", "5", &toy).contains("- **hidden_size**: 2048 → 64 (small)"));
    }

    #[test]
    fn moe_counts_defaulting_to_none_get_values() {
        // dots1's shape (transformers 5.16.1): counts annotated `int | None = None`.
        let src = "class DConfig(PreTrainedConfig):\n    model_type = \"d\"\n    hidden_size: int = 4608\n    moe_intermediate_size: int = 1408\n    n_shared_experts: int | None = None\n    n_routed_experts: int | None = None\n    num_experts_per_tok: int | None = None\n    moe_topk: int = 1\n";
        let m = ConfigurationModule::parse("c.py".into(), src).unwrap();
        let toy = toy_config(&m, m.class("DConfig").unwrap(), "DForCausalLM", true);
        let c = &toy.config;
        assert_eq!((c["n_routed_experts"].as_i64(), c["num_experts_per_tok"].as_i64()), (Some(EXPERTS), Some(2)));
        assert_eq!(c["n_shared_experts"], 1);
        assert_eq!(c["moe_topk"], 1, "a top-1 router stays top-1");
        let text = readme("d", "DConfig", "x", "5", &toy);
        assert!(text.contains("- **n_routed_experts**: null → 4 (few experts; the default is None"), "{text}");
        // Not categorised MoE: a None count stays None.
        let toy = toy_config(&m, m.class("DConfig").unwrap(), "DForCausalLM", false);
        assert!(toy.config["n_routed_experts"].is_null());
    }
}
