//! What lint reads from a toy config (`tests/toy_config/*/config.json`):
//! the text model's `model_type`s and dimensions, and whether the config
//! is one of a registry key's model. Shared by PG402 and PG503.

/// The text configuration of a model config JSON (`thinker_config.text_config`,
/// `text_config`, or the config itself): the `model_type`s of the config
/// and of that text configuration, its `hidden_size` and
/// `moe_intermediate_size`.
pub fn text_dims(config: &serde_json::Value) -> (Vec<String>, Option<u64>, Option<u64>) {
    let text = config
        .get("thinker_config")
        .and_then(|t| t.get("text_config"))
        .or_else(|| config.get("text_config"))
        .unwrap_or(config);
    let mut types = Vec::new();
    for v in [config, text] {
        if let Some(t) = v.get("model_type").and_then(|t| t.as_str())
            && !types.iter().any(|x| x == t)
        {
            types.push(t.to_string());
        }
    }
    let num = |k: &str| text.get(k).and_then(|v| v.as_u64());
    (types, num("hidden_size"), num("moe_intermediate_size"))
}

/// Whether a toy config with these `model_type`s is one of the model
/// registered as `key` (the type itself, or its `_text` variant either way).
pub fn is_for_model(types: &[String], key: &str) -> bool {
    types.iter().any(|t| t == key || t.strip_suffix("_text") == Some(key) || format!("{key}_text") == *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omni_text_dims_and_model() {
        let omni: serde_json::Value = serde_json::from_str(
            r#"{"model_type": "qwen3_omni_moe", "thinker_config": {"text_config": {"model_type": "qwen3_omni_moe_text", "hidden_size": 256, "moe_intermediate_size": 128}}}"#,
        )
        .unwrap();
        let (types, hidden, intermediate) = text_dims(&omni);
        assert_eq!(
            (types.clone(), hidden, intermediate),
            (vec!["qwen3_omni_moe".into(), "qwen3_omni_moe_text".into()], Some(256), Some(128))
        );
        assert!(is_for_model(&types, "qwen3_omni_moe"));
        assert!(!is_for_model(&types, "qwen3"));
    }
}
