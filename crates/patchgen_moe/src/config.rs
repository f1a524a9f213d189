//! The MoE dimensions of a `config.json`: the text config is
//! `thinker_config.text_config`, else `text_config`, else the top level;
//! E = `num_experts | n_routed_experts | num_local_experts`, I =
//! `moe_intermediate_size`, else `intermediate_size` (mixtral, gpt_oss),
//! H = `hidden_size`; which layers are dense comes from `mlp_layer_types`,
//! `mlp_only_layers`, `first_k_dense_replace`, `decoder_sparse_step`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// Largest expert or layer count accepted from a `config.json`.
pub const MAX_COUNT: u64 = 1 << 16;
/// Largest hidden or intermediate size accepted from a `config.json`.
pub const MAX_SIZE: u64 = 1 << 24;

/// The integer keys read, with their bound.
const BOUNDED: &[(&str, u64)] = &[
    ("num_experts", MAX_COUNT),
    ("n_routed_experts", MAX_COUNT),
    ("num_local_experts", MAX_COUNT),
    ("moe_num_experts", MAX_COUNT),
    ("num_hidden_layers", MAX_COUNT),
    ("first_k_dense_replace", MAX_COUNT),
    ("decoder_sparse_step", MAX_COUNT),
    ("moe_layer_freq", MAX_COUNT),
    ("hidden_size", MAX_SIZE),
    ("moe_intermediate_size", MAX_SIZE),
    ("intermediate_size", MAX_SIZE),
];

#[derive(Clone, Debug, Default, Serialize)]
pub struct MoeDims {
    pub path: PathBuf,
    /// Top-level `model_type`.
    pub model_type: Option<String>,
    /// The text config's `model_type` when nested.
    pub text_model_type: Option<String>,
    /// Which object the dims came from (`thinker_config.text_config`, ...).
    pub text_path: String,
    pub experts: Option<u64>,
    pub experts_key: Option<String>,
    pub hidden: Option<u64>,
    pub intermediate: Option<u64>,
    pub intermediate_key: Option<String>,
    pub layers: Option<u64>,
    /// Layers the config says are dense (no routed experts), when it says.
    pub dense_layers: Option<Vec<u64>>,
    pub dense_rule: Option<String>,
}

impl MoeDims {
    pub fn load(path: &Path) -> Result<MoeDims, crate::error::MoeError> {
        use crate::error::MoeError;
        let text = patchgen_cache::bounded::read_to_string(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
            .map_err(|source| MoeError::ConfigUnreadable { path: path.to_path_buf(), source })?;
        let v: Value = serde_json::from_str(&text).map_err(|e| MoeError::ConfigJson {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let dims = MoeDims::from_value(path, &v)?;
        dims.check_sizes().map_err(MoeError::Config)?;
        Ok(dims)
    }

    /// The dims fit the arithmetic done on them: `2 * I` (the width of a
    /// fused `gate_up_proj`) in 64 bits. `Err` names the file and the key.
    pub(crate) fn check_sizes(&self) -> Result<(), String> {
        if let (Some(i), Some(key)) = (self.intermediate, &self.intermediate_key)
            && i.checked_mul(2).is_none()
        {
            let key = if self.text_path.is_empty() { key.clone() } else { format!("{}.{key}", self.text_path) };
            return Err(format!(
                "{}: `{key}` is {i}: twice it (the width of a fused gate_up_proj) does not fit in 64 bits\n  help: a model's MoE intermediate size is far smaller; correct config.json",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// The dims of a parsed `config.json`; an error naming the key when a
    /// count or size is beyond [`MAX_COUNT`] / [`MAX_SIZE`] (the loops and
    /// products over them must stay bounded, whatever the file says).
    pub fn from_value(path: &Path, cfg: &Value) -> Result<MoeDims, crate::error::MoeError> {
        let nested = cfg.get("thinker_config").and_then(|t| t.get("text_config")).filter(|t| t.is_object());
        let (text, text_path) = match nested {
            Some(t) => (t, "thinker_config.text_config"),
            None => match cfg.get("text_config").filter(|t| t.is_object()) {
                Some(t) => (t, "text_config"),
                None => (cfg, ""),
            },
        };
        for (key, max) in BOUNDED {
            for (at, v) in [(text_path, text.get(*key)), ("", cfg.get(*key))] {
                if let Some(n) = v.and_then(Value::as_u64).filter(|n| n > max) {
                    let dotted = if at.is_empty() { key.to_string() } else { format!("{at}.{key}") };
                    return Err(crate::error::MoeError::Config(format!(
                        "{}: `{dotted}` is {n}, more than patchgen accepts ({max}): the config is not a real model's",
                        path.display()
                    )));
                }
            }
        }
        let u = |k: &str| text.get(k).and_then(Value::as_u64);
        let first = |keys: &[&str]| keys.iter().find_map(|k| u(k).map(|v| (v, k.to_string())));
        let (experts, experts_key) =
            first(&["num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"]).unzip();
        let (intermediate, intermediate_key) = first(&["moe_intermediate_size", "intermediate_size"]).unzip();
        let layers = u("num_hidden_layers");
        let mut d = MoeDims {
            path: path.to_path_buf(),
            model_type: cfg.get("model_type").and_then(Value::as_str).map(str::to_string),
            text_model_type: if text_path.is_empty() {
                None
            } else {
                text.get("model_type").and_then(Value::as_str).map(str::to_string)
            },
            text_path: text_path.to_string(),
            experts,
            experts_key,
            hidden: u("hidden_size"),
            intermediate,
            intermediate_key,
            layers,
            dense_layers: None,
            dense_rule: None,
        };
        if let Some(types) = text.get("mlp_layer_types").and_then(Value::as_array) {
            let dense = types
                .iter()
                .enumerate()
                .filter(|(_, t)| t.as_str().is_some_and(|s| s != "sparse" && s != "moe"))
                .map(|(i, _)| i as u64)
                .collect();
            d.dense_layers = Some(dense);
            d.dense_rule = Some("mlp_layer_types".into());
        } else if let Some(n) = layers {
            let only: Vec<u64> = text
                .get("mlp_only_layers")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let k = u("first_k_dense_replace");
            let step = u("decoder_sparse_step");
            let freq = u("moe_layer_freq");
            if k.is_some() || step.is_some() || !only.is_empty() {
                let only: std::collections::HashSet<u64> = only.into_iter().collect();
                let dense = (0..n)
                    .filter(|&l| {
                        only.contains(&l)
                            || k.is_some_and(|k| l < k)
                            || step.is_some_and(|s| s > 0 && (l + 1) % s != 0)
                            || freq.is_some_and(|f| f > 1 && k.is_some() && l % f != 0)
                    })
                    .collect();
                let mut rule = Vec::new();
                if k.is_some() {
                    rule.push("first_k_dense_replace");
                }
                if !only.is_empty() {
                    rule.push("mlp_only_layers");
                }
                if step.is_some() {
                    rule.push("decoder_sparse_step");
                }
                d.dense_layers = Some(dense);
                d.dense_rule = Some(rule.join(" + "));
            }
        }
        Ok(d)
    }

    /// The layers expected to hold routed experts, when the config tells.
    pub fn moe_layers(&self) -> Option<Vec<u64>> {
        let n = self.layers?;
        let dense = self.dense_layers.clone().unwrap_or_default();
        Some((0..n).filter(|l| !dense.contains(l)).collect())
    }

    /// The model type recipes are looked up by.
    pub fn recipe_model_type(&self) -> Option<&str> {
        self.model_type.as_deref().or(self.text_model_type.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_text_configs_and_dense_layers() {
        let v: Value = serde_json::from_str(
            r#"{"model_type":"qwen3_omni_moe","thinker_config":{"text_config":{"model_type":"t","num_experts":4,
            "hidden_size":8,"moe_intermediate_size":6,"num_hidden_layers":4,"mlp_only_layers":[0],"decoder_sparse_step":1}}}"#,
        )
        .unwrap();
        let d = MoeDims::from_value(Path::new("c"), &v).unwrap();
        assert_eq!((d.experts, d.hidden, d.intermediate), (Some(4), Some(8), Some(6)));
        assert_eq!(d.text_path, "thinker_config.text_config");
        assert_eq!(d.moe_layers(), Some(vec![1, 2, 3]));
        let v: Value = serde_json::from_str(
            r#"{"model_type":"deepseek_v3","n_routed_experts":4,"hidden_size":8,"moe_intermediate_size":6,
            "intermediate_size":20,"num_hidden_layers":3,"first_k_dense_replace":1}"#,
        )
        .unwrap();
        let d = MoeDims::from_value(Path::new("c"), &v).unwrap();
        assert_eq!(d.experts_key.as_deref(), Some("n_routed_experts"));
        assert_eq!(d.intermediate, Some(6));
        assert_eq!(d.moe_layers(), Some(vec![1, 2]));
        let v: Value = serde_json::from_str(
            r#"{"model_type":"gpt_oss","num_local_experts":4,"hidden_size":8,"intermediate_size":6,"num_hidden_layers":2}"#,
        )
        .unwrap();
        let d = MoeDims::from_value(Path::new("c"), &v).unwrap();
        assert_eq!((d.experts, d.intermediate), (Some(4), Some(6)));
        assert_eq!(d.moe_layers(), Some(vec![0, 1]));
        // ernie4_5_moe's own key (its config maps `num_experts` to it).
        let v: Value =
            serde_json::from_str(r#"{"model_type":"ernie4_5_moe","moe_num_experts":64,"hidden_size":8}"#).unwrap();
        let d = MoeDims::from_value(Path::new("c"), &v).unwrap();
        assert_eq!((d.experts, d.experts_key.as_deref()), (Some(64), Some("moe_num_experts")));
    }

    #[test]
    fn an_intermediate_size_twice_which_overflows_is_refused() {
        // Refused where it is read (a size past what patchgen accepts, naming
        // the key), so twice it never has to be computed.
        let v: Value =
            serde_json::from_str(r#"{"text_config":{"moe_intermediate_size":9223372036854775808,"hidden_size":8}}"#)
                .unwrap();
        let err = MoeDims::from_value(Path::new("ck/config.json"), &v).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("ck/config.json") && err.contains("moe_intermediate_size"), "{err}");
        let v: Value = serde_json::from_str(r#"{"intermediate_size":4096}"#).unwrap();
        assert!(MoeDims::from_value(Path::new("c"), &v).unwrap().check_sizes().is_ok());
    }
}
