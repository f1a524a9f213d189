//! Differential test of the static reading of `conversion_mapping.py`:
//! python3 imports the real file of each wheel against a torch-free stub of
//! `core_model_loading`, runs `_build_checkpoint_conversion_mapping()` and
//! classifies every recipe (`tests/moe/recipes_oracle.py`); patchgen must
//! find the same keys and the same kinds. Plus the hand-checked table of
//! protocol-research §2.4 for the models VeOmni ships.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchgen_core::upstream::SearchPath;
use patchgen_moe::recipes::{ExpertNaming, RecipeKind, Recipes};

/// The wheels to check: 5.9.0 (`PATCHGEN_TEST_TRANSFORMERS`) and 5.16.1
/// (`PATCHGEN_TEST_TRANSFORMERS_5_16`); both set by scripts/test-env.sh.
fn wheels() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (var, version) in [("PATCHGEN_TEST_TRANSFORMERS", "5.9.0"), ("PATCHGEN_TEST_TRANSFORMERS_5_16", "5.16.1")] {
        match std::env::var_os(var) {
            Some(p) => out.push((version.to_string(), PathBuf::from(p))),
            None if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("{var} must point at the transformers {version} wheel (scripts/test-env.sh fetches it)")
            }
            None => eprintln!("skipping transformers {version}: {var} is not set (run through scripts/test.sh)"),
        }
    }
    out
}

fn python() -> String {
    std::env::var("PATCHGEN_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn kind_string(k: &RecipeKind) -> String {
    match k {
        RecipeKind::PerExpert { naming } => format!(
            "per_expert:{}",
            match naming {
                ExpertNaming::GateUpDown => "gate_up_down",
                ExpertNaming::W1W3W2 => "w1_w3_w2",
                ExpertNaming::UpDown => "up_down",
            }
        ),
        RecipeKind::FusedTransposed => "fused_transposed".into(),
        RecipeKind::Other { what } => format!("other:{what}"),
        RecipeKind::Direct => "direct".into(),
    }
}

fn load(wheel: &Path) -> Recipes {
    Recipes::load(&SearchPath::new(vec![wheel.to_path_buf()])).expect("conversion_mapping.py reads")
}

#[test]
fn recipes_agree_with_python_on_every_key() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/moe/recipes_oracle.py");
    for (version, wheel) in wheels() {
        let out = Command::new(python()).arg(&oracle).arg(&wheel).output().expect("run python3");
        assert!(out.status.success(), "oracle failed on {version}: {}", String::from_utf8_lossy(&out.stderr));
        let expected: std::collections::BTreeMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
        let recipes = load(&wheel);
        let ours: std::collections::BTreeMap<String, String> =
            recipes.mapping.iter().map(|(k, r)| (k.clone(), kind_string(&r.kind()))).collect();
        let keys_e: Vec<&String> = expected.keys().collect();
        let keys_o: Vec<&String> = ours.keys().collect();
        assert_eq!(keys_o, keys_e, "transformers {version}: keys differ");
        for (k, v) in &expected {
            assert_eq!(&ours[k], v, "transformers {version}: recipe of {k}");
        }
        assert!(expected.values().filter(|v| v.starts_with("per_expert")).count() > 20);
    }
}

#[test]
fn veomni_models_match_the_research_table() {
    let gate = RecipeKind::PerExpert { naming: ExpertNaming::GateUpDown };
    for (version, wheel) in wheels() {
        let r = load(&wheel);
        for m in ["qwen3_moe", "qwen3_omni_moe", "deepseek_v3", "glm_moe_dsa", "qwen3_5_moe_text"] {
            assert_eq!(r.checkpoint_layout_need(m), gate, "{version} {m}");
        }
        assert_eq!(r.recipe("qwen3_moe").unwrap().alias_of.as_deref(), Some("qwen2_moe"));
        assert_eq!(r.checkpoint_layout_need("qwen3_vl_moe"), RecipeKind::FusedTransposed, "{version}");
        assert_eq!(r.checkpoint_layout_need("mixtral"), RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 });
        assert_eq!(r.checkpoint_layout_need("deepseek_v4"), RecipeKind::PerExpert { naming: ExpertNaming::W1W3W2 });
        for m in ["qwen3_5_moe", "gpt_oss"] {
            assert_eq!(r.checkpoint_layout_need(m), RecipeKind::Direct, "{version} {m}");
        }
        assert!(matches!(r.checkpoint_layout_need("ernie4_5_vl_moe"), RecipeKind::Other { .. }));
        let has = |m: &str| r.recipe(m).is_some();
        if version == "5.16.1" {
            for m in
                ["axk1", "axk2", "deepseek_ocr2", "deepseek_v32", "glm5_next", "kimi_k25", "mellum", "mimo_v2_flash"]
            {
                assert_eq!(r.checkpoint_layout_need(m), gate, "{version} {m}");
            }
            assert!(matches!(r.checkpoint_layout_need("step3p7"), RecipeKind::Other { .. }));
            assert!(matches!(r.checkpoint_layout_need("inkling_mm_model"), RecipeKind::Other { .. }));
            assert!(matches!(r.checkpoint_layout_need("granitemoe"), RecipeKind::Other { .. }));
        } else {
            for m in ["axk1", "axk2", "deepseek_ocr2", "deepseek_v32", "glm5_next", "kimi_k25", "mellum", "step3p7"] {
                assert!(!has(m), "{version} has no recipe for {m}");
            }
        }
    }
}
