//! The test-table entries a new model needs (protocol Phase 6), in the
//! exact shapes VeOmni's tables use at d9774494: printed for the user to
//! paste, never written into the test files.

use super::facts::Category;

/// One entry: the file, the table and the text to add.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Entry {
    pub file: &'static str,
    pub table: &'static str,
    pub text: String,
}

/// The entries for model `m` (the HF module name, also the test id).
pub fn entries(m: &str, category: Category, causal_class: &str) -> Vec<Entry> {
    let moe = if category.is_moe() { "True" } else { "False" };
    let e2e_id = if category.is_multimodal() { m.replace('_', "") } else { m.to_string() };
    let mut out = vec![Entry {
        file: "tests/models/test_models_patch.py",
        table: "TEST_CASES",
        text: format!(
            "    pytest.param(\n        \"./tests/toy_config/{m}_toy/config.json\",\n        {moe},\n        _DEFAULT_RTOL,\n        _DEFAULT_ATOL,\n        id=\"{m}\",\n    ),"
        ),
    }];
    if !category.is_multimodal() {
        out.push(Entry {
            file: "tests/e2e/test_e2e_parallel.py",
            table: "text_test_cases",
            text: format!(
                "    pytest.param(\n        \"{m}\",\n        \"./tests/toy_config/{m}_toy\",\n        {moe},  # is_moe\n        _DEFAULT_RTOL,\n        _DEFAULT_ATOL,\n        None,  # max_sp_size\n        None,  # max_ep_size\n    ),"
            ),
        });
    } else {
        out.push(Entry {
            file: "tests/e2e/test_e2e_parallel.py",
            table: "the VL/omni case list of the closest sibling (id without underscores)",
            text: format!("    # id \"{e2e_id}\": mirror the sibling's entry; these lists have 5 or 6 fields"),
        });
        out.push(Entry {
            file: "tests/models/test_vlm_trainer.py",
            table: "_FREEZE_VIT_VLM_CASES",
            text: format!("    pytest.param(\"./tests/toy_config/{m}_toy/config.json\", id=\"{m}\"),"),
        });
        let (table, batch) = if matches!(category, Category::Omni | Category::OmniMoe) {
            ("_omni_cases", "_omni_batch")
        } else {
            ("_vlm_cases", "_vlm_batch")
        };
        out.push(Entry {
            file: "tests/distributed/test_dummy_forward.py",
            table,
            text: format!("    pytest.param(\"{m}\", \"./tests/toy_config/{m}_toy\", partial({batch}, patch_size=16), id=\"{m}\"),"),
        });
    }
    let overrides = if category.is_moe() { ", config_overrides={\"_experts_implementation\": \"eager\"}" } else { "" };
    let kind = if causal_class.ends_with("ForConditionalGeneration") { "conditional_generation" } else { "causal_lm" };
    out.push(Entry {
        file: "tests/models/test_models_logits_equal_v5.py",
        table: "CASES",
        text: format!("    Case(\"{m}-eager\", _toy(\"{m}_toy\"), \"{causal_class}\", \"{kind}\"{overrides}),"),
    });
    // The table of multimodal models: an entry makes the tests read the
    // model's `image_token_id`; a text model has none (its dataset defaults to "text").
    if category.is_multimodal() {
        out.push(Entry {
            file: "tests/models/utils.py",
            table: "MODEL_TO_DATASET",
            text: format!("    \"{m}\": ...,  # the key must equal the test id and the model_type"),
        });
    }
    out.push(Entry {
        file: "tests/tools/training_utils.py",
        table: "_NPU_PER_MODEL_OVERRIDES",
        text: format!(
            "    \"{e2e_id}\": {{\n        \"rms_norm_implementation\": \"eager\",\n        \"rotary_pos_emb_implementation\": \"eager\",\n    }},"
        ),
    });
    if category.is_moe() {
        out.push(Entry {
            file: "tests/models/test_checkpoint_tensor_converter.py",
            table: "(a test group)",
            text: "    # when a converter is added: mirror the qwen3_moe block (can_handle, convert, finalize, factory, integration)".into(),
        });
    }
    out
}
