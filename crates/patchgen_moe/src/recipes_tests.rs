use super::*;

const FIXTURE: &str = r#"
from .core_model_loading import MergeModulelist, Concatenate, Transpose, WeightConverter, WeightRenaming

_MODEL_TO_CONVERSION_PATTERN = {
    "alias_moe": "base_moe",
    "own_moe": "base_moe",
    "late": "copied",
    "dangling": "missing",
}


def _build_checkpoint_conversion_mapping():
    mapping = {
        "base_moe": [
            WeightConverter(
                source_patterns=["mlp.experts.*.gate_proj.weight", "mlp.experts.*.up_proj.weight"],
                target_patterns="mlp.experts.gate_up_proj",
                operations=[MergeModulelist(dim=0), Concatenate(dim=1)],
            ),
            WeightConverter("mlp.experts.*.down_proj.weight", "mlp.experts.down_proj", [MergeModulelist(dim=0)]),
        ],
        "own_moe": [WeightRenaming("a", "b")],
        "vl": [WeightConverter("mlp.experts.down_proj", "mlp.experts.down_proj", operations=[Transpose(1, 2)])],
        "mix": [
            WeightConverter([".experts.*.w1.weight", ".experts.*.w3.weight"], ".experts.gate_up_proj",
                            operations=[MergeModulelist(dim=0), Concatenate(dim=1)]),
        ],
        "shared_only": [WeightRenaming(r"\.shared_experts\.w1\.", ".shared_experts.gate_proj.")],
        "renamed": [WeightRenaming("input_linear.weight", "experts.gate_up_proj")],
        "prefix": [WeightRenaming("language_model", "model")],
    }
    mapping["copied"] = mapping["prefix"].copy()
    mapping["copied"] += mapping["base_moe"].copy()
    mapping["plus"] = mapping["vl"].copy() + [WeightRenaming("x", "y")]
    mapping["comp"] = [WeightRenaming(r.source_patterns[0], "z") for r in mapping["prefix"]]
    for model_type, base_pattern in _MODEL_TO_CONVERSION_PATTERN.items():
        if model_type in mapping:
            continue
        mapping[model_type] = mapping[base_pattern].copy()
    mapping["after_fill"] = mapping["alias_moe"].copy()
    return mapping
"#;

fn fixture() -> Recipes {
    Recipes::parse(PathBuf::from("conversion_mapping.py"), FIXTURE).unwrap()
}

#[test]
fn literal_statements_and_alias_fill() {
    let r = fixture();
    let per_expert = RecipeKind::PerExpert { naming: ExpertNaming::GateUpDown };
    assert_eq!(r.checkpoint_layout_need("base_moe"), per_expert);
    assert_eq!(r.checkpoint_layout_need("alias_moe"), per_expert);
    assert_eq!(r.recipe("alias_moe").unwrap().alias_of.as_deref(), Some("base_moe"));
    // An existing key is never overwritten by the alias fill.
    assert_eq!(r.checkpoint_layout_need("own_moe"), RecipeKind::Direct);
    assert_eq!(r.recipe("own_moe").unwrap().alias_of, None);
    // `.copy()` then `+=` of another recipe.
    assert_eq!(r.checkpoint_layout_need("copied"), per_expert);
    assert_eq!(r.checkpoint_layout_need("late"), per_expert);
    assert_eq!(r.checkpoint_layout_need("plus"), RecipeKind::FusedTransposed);
    assert_eq!(r.checkpoint_layout_need("vl"), RecipeKind::FusedTransposed);
    assert_eq!(r.checkpoint_layout_need("mix"), RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 });
    assert_eq!(r.checkpoint_layout_need("shared_only"), RecipeKind::Direct);
    assert_eq!(r.checkpoint_layout_need("renamed"), RecipeKind::Other { what: "WeightRenaming to experts".into() });
    assert_eq!(r.checkpoint_layout_need("comp"), RecipeKind::Direct);
    assert_eq!(r.checkpoint_layout_need("after_fill"), per_expert);
    // An alias to a missing base (a KeyError in Python) fills nothing.
    assert!(r.recipe("dangling").is_none());
    assert_eq!(r.checkpoint_layout_need("unknown_model"), RecipeKind::Direct);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
}

#[test]
fn broken_files_are_located_errors() {
    let e = Recipes::parse(PathBuf::from("cm.py"), "x = 1\ndef (:\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.to_string().starts_with("cm.py:2: not valid Python"), "{e}");
    let e = Recipes::parse(PathBuf::from("cm.py"), "x = 1\n").unwrap_err();
    assert!(e.message.contains("_build_checkpoint_conversion_mapping"), "{e}");
}

#[test]
fn shared_experts_are_not_routed() {
    assert!(names_routed_experts("mlp.experts.gate_up_proj"));
    assert!(!names_routed_experts(r"\.shared_experts\.w1\."));
    assert!(names_routed_experts("shared_experts.x.experts.y"));
}
