//! `patchgen moe inspect|convert` against an independent implementation:
//! checkpoints are built by Python's `safetensors` + `numpy`
//! (`tests/moe/ckpt.py`, interpreter from `PATCHGEN_TEST_PYTHON`, set by
//! scripts/test-env.sh), converted by patchgen, and every output tensor is
//! compared byte for byte with numpy's stack/concatenate/transpose of the
//! source read back through `safetensors.safe_open`.

#[path = "moe/support.rs"]
mod support;

use std::path::Path;
use std::process::Command;

use support::{Out, make, ok, py, python};

fn check(python: &str, src: &Path, dst: &Path, family: &str, to: &str) {
    let o = py(python, &["check", src.to_str().unwrap(), dst.to_str().unwrap(), family, to]);
    assert_eq!(o.code, 0, "{family} -> {to}: {}{}", o.stdout, o.stderr);
}

fn patchgen(cwd: &Path, args: &[&str]) -> Out {
    Command::new(env!("CARGO_BIN_EXE_patchgen"))
        .args(args)
        .current_dir(cwd)
        .env_remove("PYTHONPATH")
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("run patchgen")
        .into()
}

fn convert(dir: &Path, src: &Path, dst: &Path, extra: &[&str]) -> Out {
    let mut args = vec!["moe", "convert", src.to_str().unwrap(), dst.to_str().unwrap(), "--verify"];
    args.extend_from_slice(extra);
    patchgen(dir, &args)
}

#[test]
fn every_family_converts_to_fused_like_numpy() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for family in ["qwen3_moe", "deepseek_v3", "qwen3_vl_moe", "mixtral", "qwen3_omni_moe", "stacked", "fused"] {
        for (shards, shard_size) in [("1", "5GB"), ("3", "1500B")] {
            let src = d.join(format!("{family}-{shards}"));
            make(&python, family, &src, &["--shards", shards]);
            let dst = d.join(format!("{family}-{shards}-fused"));
            let o = convert(d, &src, &dst, &["--shard-size", shard_size, "--jobs", "2"]);
            ok(&o, family);
            check(&python, &src, &dst, family, "fused");
            let f = py(&python, &["hf-format", dst.to_str().unwrap()]);
            assert_eq!(f.code, 0, "{family}: {}", f.stderr);
            assert!(dst.join("config.json").is_file() && dst.join("tokenizer.json").is_file());
            let sharded = dst.join("model.safetensors.index.json").is_file();
            assert_eq!(sharded, shards == "3", "{family}: {}", o.stdout);
        }
    }
}

/// Shards of tens of MB: the writer hands 8 MiB ranges to its flusher
/// thread for writeback as it goes (convert.rs `WRITEBACK_CHUNK`); the
/// small checkpoints above never fill one.
#[test]
fn checkpoints_larger_than_a_writeback_chunk_convert_like_numpy() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for (family, to) in [("qwen3_moe", "fused"), ("qwen3_vl_moe", "fused"), ("fused", "per-expert")] {
        let src = d.join(family);
        make(&python, family, &src, &["--hidden", "256", "--inter", "96", "--experts", "48", "--shards", "2"]);
        let dst = d.join(format!("{family}-{to}"));
        ok(&convert(d, &src, &dst, &["--to", to, "--shard-size", "20MB", "--jobs", "2"]), family);
        check(&python, &src, &dst, family, &to.replace('-', "_"));
        let big =
            std::fs::read_dir(&dst).unwrap().filter_map(|e| e.ok()).any(|e| e.metadata().unwrap().len() > 9 << 20);
        assert!(big, "{family}: no output shard above 9 MiB");
    }
}

#[test]
fn fused_transposed_and_stacked_convert_to_per_expert_like_numpy() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for family in ["qwen3_vl_moe", "stacked", "fused"] {
        let src = d.join(family);
        make(&python, family, &src, &[]);
        let dst = d.join(format!("{family}-split"));
        ok(&convert(d, &src, &dst, &["--to", "per-expert"]), family);
        check(&python, &src, &dst, family, "per_expert");
    }
}

#[test]
fn per_expert_fused_per_expert_round_trip_is_byte_identical() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for family in ["qwen3_moe", "deepseek_v3", "qwen3_omni_moe"] {
        let src = d.join(family);
        make(&python, family, &src, &["--shards", "2"]);
        let fused = d.join(format!("{family}-f"));
        let back = d.join(format!("{family}-a"));
        ok(&convert(d, &src, &fused, &[]), family);
        ok(&convert(d, &fused, &back, &["--to", "per-expert", "--shard-size", "2KB"]), family);
        let o = py(&python, &["same", src.to_str().unwrap(), back.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{family}: {}", o.stderr);
    }
}

#[test]
fn ambiguous_layouts_are_refused_unless_told() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // hidden == 2 * I: gate_up is square per expert; down still decides, but never guess.
    let c = d.join("c-2to1");
    make(&python, "fused", &c, &["--hidden", "12", "--inter", "6"]);
    let o = convert(d, &c, &d.join("out1"), &["--to", "per-expert"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("hidden_size == 2 * intermediate"), "{}", o.stderr);
    assert!(o.stderr.contains("--source-layout"), "{}", o.stderr);
    assert!(!d.join("out1").exists());
    let i = patchgen(d, &["moe", "inspect", c.to_str().unwrap()]);
    assert!(i.stdout.contains("ambiguous: model.layers.1.mlp.experts: gate_up_proj [4, 12, 12]"), "{}", i.stdout);
    ok(&convert(d, &c, &d.join("out1"), &["--to", "per-expert", "--source-layout", "fused"]), "told");
    check(&python, &c, &d.join("out1"), "fused", "per_expert");
    // The shapes say C: telling "transposed" is refused.
    let o = convert(d, &c, &d.join("out1b"), &["--to", "per-expert", "--source-layout", "transposed"]);
    assert!(o.stderr.contains("contradicts the shapes"), "{}", o.stderr);

    // hidden == I: down is square.
    let sq = d.join("c-square");
    make(&python, "fused", &sq, &["--hidden", "6", "--inter", "6"]);
    let o = convert(d, &sq, &d.join("out2"), &["--to", "per-expert"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("hidden_size == intermediate"), "{}", o.stderr);

    // Transposed with hidden == 2 * I: down says B, gate_up cannot tell by itself.
    let vl = d.join("vl-2to1");
    make(&python, "qwen3_vl_moe", &vl, &["--hidden", "12", "--inter", "6", "--experts", "3"]);
    let i = patchgen(d, &["moe", "inspect", vl.to_str().unwrap()]);
    assert!(i.stdout.contains("model.language_model.layers.*.mlp.experts: B fused transposed"), "{}", i.stdout);
    assert!(
        i.stdout.contains("ambiguous: model.language_model.layers.0.mlp.experts: gate_up_proj [3, 12, 12]"),
        "{}",
        i.stdout
    );
    let o = convert(d, &vl, &d.join("out3"), &[]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    ok(&convert(d, &vl, &d.join("out3"), &["--source-layout", "transposed"]), "told transposed");
    check(&python, &vl, &d.join("out3"), "qwen3_vl_moe", "fused");
}

#[test]
fn inspect_names_families_recipes_and_gaps() {
    let Some(python) = python() else { return };
    let wheel = std::env::var("PATCHGEN_TEST_TRANSFORMERS").ok();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let cases = [
        ("qwen3_moe", "model.layers.*.mlp.experts: A per-expert split", "per-expert (gate_proj/up_proj/down_proj)"),
        ("deepseek_v3", "model.layers.*.mlp.experts: A per-expert split", "per-expert (gate_proj/up_proj/down_proj)"),
        ("mixtral", "model.layers.*.block_sparse_moe.experts: A' per-expert, mixtral naming", "per-expert (w1/w3/w2)"),
        ("qwen3_vl_moe", "model.language_model.layers.*.mlp.experts: B fused transposed", "fused-transposed"),
        ("qwen3_omni_moe", "thinker.model.layers.*.mlp.experts: A per-expert split", "per-expert (gate_proj"),
        ("gpt_oss", "model.layers.*.mlp.experts: E gpt_oss native", "none (direct)"),
        ("stacked", "model.layers.*.mlp.experts: D legacy stacked", "per-expert"),
        ("fused", "model.layers.*.mlp.experts: C fused v5", "none (direct)"),
    ];
    for (family, line, recipe) in cases {
        let src = d.join(family);
        make(&python, family, &src, &[]);
        let mut args = vec!["moe", "inspect", src.to_str().unwrap()];
        if let Some(w) = &wheel {
            args.extend(["--upstream", w.as_str()]);
        }
        let o = patchgen(d, &args);
        ok(&o, family);
        assert!(o.stdout.contains(line), "{family}: {}", o.stdout);
        if wheel.is_some() {
            assert!(o.stdout.contains("recipe: transformers 5.9.0 for "), "{}", o.stdout);
            assert!(o.stdout.contains(recipe), "{family}: {}", o.stdout);
        }
        // Layers 1-3 hold experts; dense layer 0 is not a problem when config says so.
        assert!(o.stdout.contains("layers 1-3") || o.stdout.contains("layers 0-3"), "{}", o.stdout);
        assert!(!o.stdout.contains("problem"), "{family}: {}", o.stdout);
    }
    // gpt_oss is never converted.
    let o = convert(d, &d.join("gpt_oss"), &d.join("g-out"), &[]);
    assert!(o.stderr.contains("gpt_oss native layout"), "{}", o.stderr);

    // Gaps: a missing expert, a missing up of a pair, a layer without experts.
    let gap = d.join("gap");
    make(
        &python,
        "qwen3_moe",
        &gap,
        &[
            "--drop",
            "layers.1.mlp.experts.2.",
            "--drop",
            "layers.2.mlp.experts.0.up_proj",
            "--drop",
            "layers.3.mlp.experts",
        ],
    );
    let o = patchgen(d, &["moe", "inspect", gap.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["command"], "moe inspect");
    let codes: Vec<&str> = v["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["PGM001"; 5]);
    let gh = patchgen(d, &["moe", "inspect", gap.to_str().unwrap(), "--format", "github"]);
    assert!(gh.stdout.starts_with("::error file="), "{}", gh.stdout);
    assert!(gh.stdout.contains("PGM001"), "{}", gh.stdout);
    let problems: Vec<String> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["problems"].as_array().unwrap().iter().map(|p| format!("{}: {}", g["prefix"], p)))
        .collect();
    assert_eq!(
        problems,
        [
            "\"model.layers.1.mlp\": \"gate_proj missing for expert(s) 2 of 4\"",
            "\"model.layers.1.mlp\": \"up_proj missing for expert(s) 2 of 4\"",
            "\"model.layers.1.mlp\": \"down_proj missing for expert(s) 2 of 4\"",
            "\"model.layers.2.mlp\": \"up_proj missing for expert(s) 0 of 4\"",
        ]
    );
    assert_eq!(
        v["layer_problems"][0],
        "model.layers.*.mlp.experts: no experts in layer(s) 3 that config.json makes MoE layers (mlp_only_layers + decoder_sparse_step)"
    );
    let o = convert(d, &gap, &d.join("gap-out"), &[]);
    assert!(o.stderr.contains("gate_proj missing for expert(s) 2 of 4"), "{}", o.stderr);

    // Quantised experts are reported and refused.
    let q = d.join("quant");
    make(&python, "qwen3_moe", &q, &["--quant"]);
    let o = patchgen(d, &["moe", "inspect", q.to_str().unwrap()]);
    assert!(o.stdout.contains("quantised: down_proj.weight_scale_inv, gate_proj.weight_scale_inv"), "{}", o.stdout);
    let o = convert(d, &q, &d.join("q-out"), &[]);
    assert!(o.stderr.contains("dequantising is out of scope"), "{}", o.stderr);
}

#[test]
fn inspect_inside_a_project_reports_fused_classes_and_converters() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(
        d.join("pyproject.toml"),
        "[tool.patchgen]\nsearch_root = \"pkg/models\"\npackage_prefix = \"pkg.models\"\n",
    )
    .unwrap();
    let m = d.join("pkg/models/qwen3_moe");
    std::fs::create_dir_all(m.join("generated")).unwrap();
    std::fs::write(
        m.join("generated/patched_modeling_qwen3_moe_gpu.py"),
        "import torch\n\n\nclass Qwen3MoeExperts(torch.nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        self.gate_up_proj = torch.nn.Parameter(\n            torch.empty(1)\n        )\n",
    )
    .unwrap();
    std::fs::write(m.join("__init__.py"), "x = 1\n").unwrap();
    let ck = d.join("ckpt");
    make(&python, "qwen3_moe", &ck, &[]);
    let o = patchgen(d, &["moe", "inspect", "ckpt"]);
    assert!(o.stdout.contains("fused experts in Qwen3MoeExperts (line 7)"), "{}", o.stdout);
    assert!(o.stdout.contains("registers no `_create_checkpoint_tensor_converter`"), "{}", o.stdout);
    std::fs::write(m.join("__init__.py"), "def f():\n    pass\n\n_create_checkpoint_tensor_converter = f\n").unwrap();
    let o = patchgen(d, &["moe", "inspect", "ckpt"]);
    assert!(o.stdout.contains("registers a converter: VeOmni converts at load"), "{}", o.stdout);
}

#[test]
fn malformed_checkpoints_and_unsafe_destinations_are_errors() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let src = d.join("q");
    make(&python, "qwen3_moe", &src, &["--shards", "2"]);
    // DST == SRC, DST inside SRC, non-empty DST: usage errors (exit 2).
    let o = convert(d, &src, &src, &[]);
    assert!(o.stderr.contains("DST is SRC or inside it") && o.code == 2, "{} {}", o.code, o.stderr);
    let o = convert(d, &src, &src.join("sub"), &[]);
    assert!(o.stderr.contains("DST is SRC or inside it") && o.code == 2, "{} {}", o.code, o.stderr);
    std::fs::create_dir_all(d.join("full")).unwrap();
    std::fs::write(d.join("full/x"), "x").unwrap();
    let o = convert(d, &src, &d.join("full"), &[]);
    assert!(o.stderr.contains("exists and is not an empty directory") && o.code == 2, "{} {}", o.code, o.stderr);
    // An empty DST is fine.
    std::fs::create_dir_all(d.join("empty")).unwrap();
    ok(&convert(d, &src, &d.join("empty"), &[]), "empty dst");
    // No leftovers next to DST.
    let stray: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".patchgen-moe-"))
        .collect();
    assert!(stray.is_empty());

    // An index naming a missing shard.
    let broken = d.join("broken");
    make(&python, "qwen3_moe", &broken, &["--shards", "2"]);
    std::fs::remove_file(broken.join("model-00002-of-00002.safetensors")).unwrap();
    let o = patchgen(d, &["moe", "inspect", broken.to_str().unwrap()]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(
            "model.safetensors.index.json: the index names 1 missing file(s): model-00002-of-00002.safetensors"
        ),
        "{}",
        o.stderr
    );
    // A truncated shard: the data ends beyond the file.
    let t = d.join("trunc");
    make(&python, "qwen3_moe", &t, &[]);
    let f = t.join("model.safetensors");
    let len = std::fs::metadata(&f).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
    file.set_len(len - 3).unwrap();
    let o = patchgen(d, &["moe", "inspect", t.to_str().unwrap()]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("beyond its end"), "{}", o.stderr);
    let o = convert(d, &t, &d.join("t-out"), &[]);
    assert_eq!(o.code, 1);
    assert!(!d.join("t-out").exists());
    // Not a checkpoint at all.
    let o = patchgen(d, &["moe", "inspect", d.join("nothing").to_str().unwrap()]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("no such file or directory"), "{}", o.stderr);
}

/// A `config.json` dimension whose double (the fused gate/up width) does
/// not fit in 64 bits: a located error naming the file and the key, for
/// `inspect` and `convert`, never a panic or a wrapped number (issue #33).
#[test]
fn a_config_dimension_past_64_bits_is_a_located_error() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ck = d.join("ck");
    std::fs::create_dir_all(&ck).unwrap();
    // One 2×2 U8 expert weight, written by hand (the format is 8 bytes of
    // little-endian header length, the JSON header, the data).
    let mut header =
        r#"{"model.layers.0.mlp.experts.0.gate_proj.weight":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]}}"#
            .to_string();
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[1, 2, 3, 4]);
    std::fs::write(ck.join("model.safetensors"), bytes).unwrap();
    let huge = u64::MAX;
    std::fs::write(
        ck.join("config.json"),
        format!(r#"{{"model_type":"qwen3_moe","text_config":{{"hidden_size":8,"moe_intermediate_size":{huge}}}}}"#),
    )
    .unwrap();
    // Refused where it is read (issue 39's bound on config.json sizes), so
    // twice it is never computed.
    let wanted = format!("config.json: `text_config.moe_intermediate_size` is {huge}, more than patchgen accepts");
    for args in [vec!["moe", "inspect", "ck"], vec!["moe", "convert", "ck", "out", "--to", "per-expert"]] {
        let o = patchgen(d, &args);
        assert_eq!(o.code, 1, "{args:?}: {}{}", o.stdout, o.stderr);
        assert!(o.stderr.contains(&wanted), "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
    }
    assert!(!d.join("out").exists());
}
