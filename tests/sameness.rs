//! The sameness test of a reuse (`patchgen_core::survey::reuse::compare`,
//! on `patchgen_python::pysource::sameness`) against python3's `ast`
//! (`tests/oracle/sameness.py`: `ast.dump` with docstrings stripped, the
//! first differing statement found on python's own tree), over real
//! transformers 5.9.0 targets: each Qwen3 target a `new` scaffold reuses,
//! renamed to another dense model's prefix, against that model's own.

mod common;
mod oracle;

use std::path::Path;

use oracle::run_python;
use patchgen_core::survey::modules::Version;
use patchgen_core::survey::reuse::{self, Target, Verdict};
use patchgen_core::survey::source::{WheelCache, resolve};

const MODELS: &[(&str, &str)] = &[
    ("olmo2", "Olmo2"),
    ("granite", "Granite"),
    ("mistral", "Mistral"),
    ("llama", "Llama"),
    ("qwen2", "Qwen2"),
    ("cohere", "Cohere"),
    ("phi3", "Phi3"),
    ("helium", "Helium"),
    ("ernie4_5", "Ernie4_5"),
    ("apertus", "Apertus"),
    ("arcee", "Arcee"),
    ("olmo", "Olmo"),
    ("glm", "Glm"),
    ("gemma", "Gemma"),
    ("starcoder2", "Starcoder2"),
    ("seed_oss", "SeedOss"),
    ("smollm3", "SmolLM3"),
    ("exaone4", "Exaone4"),
];

/// Qwen3 targets (suffix after the prefix; `None`: a function) and whether
/// the target is a whole class.
const TARGETS: &[(&str, bool)] = &[
    ("RMSNorm.forward", false),
    ("MLP.forward", false),
    ("MLP", true),
    ("apply_rotary_pos_emb", false),
    ("rotate_half", false),
    ("RotaryEmbedding.forward", false),
    ("Attention.forward", false),
    ("DecoderLayer.forward", false),
    ("Model.forward", false),
    ("ForCausalLM.forward", false),
];

fn version(wheel: &Path) -> Version {
    let cache = WheelCache {
        dir: wheel.parent().unwrap().to_path_buf(),
        package: "transformers".into(),
        download: false,
        reporter: Default::default(),
    };
    Version::new(resolve(wheel.to_str().unwrap(), Path::new("/"), &cache).unwrap())
}

fn target_name(prefix: &str, suffix: &str) -> String {
    if suffix.contains('.') || suffix.starts_with(char::is_uppercase) {
        format!("{prefix}{suffix}")
    } else {
        suffix.to_string()
    }
}

#[test]
fn reuse_sameness_matches_python_ast_on_transformers_5_9_0() {
    let Some(wheel) = common::wheel("5.9.0") else { return };
    let v = version(&wheel);
    let qwen3 = "transformers.models.qwen3.modeling_qwen3";
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (m, prefix) in MODELS {
        let module = format!("transformers.models.{m}.modeling_{m}");
        let map = vec![("Qwen3".to_string(), prefix.to_string())];
        for (suffix, is_class) in TARGETS {
            let old_t = Target { module: qwen3, target: &target_name("Qwen3", suffix), is_class: *is_class };
            let new_name = target_name(prefix, suffix);
            let new_t = Target { module: &module, target: &new_name, is_class: *is_class };
            // The oracle reads a class's own methods only: compare where both
            // classes define the target themselves.
            let (Some(old), Some(new)) = (reuse::target_text(&v, old_t), reuse::target_text(&v, new_t)) else {
                continue;
            };
            if old.path != new.path && !new.path.to_string_lossy().contains(&format!("modeling_{m}.py")) {
                continue;
            }
            let renamed = patchgen_core::codegen::text::apply_name_map(&old.text, Some(&map));
            cases.push((renamed, new.text.clone()));
            let verdict = reuse::compare(&v, old_t, Some(&map), &v, new_t);
            let got = match &verdict {
                Verdict::Same => None,
                Verdict::Differs(d) => {
                    Some((d.written_for_line + 1 - old.first_line, d.reused_line + 1 - new.first_line))
                }
                Verdict::Unresolved(why) => panic!("{m} {suffix}: {why}"),
            };
            ours.push((format!("{prefix}{suffix}"), got));
        }
    }
    assert!(cases.len() >= 120, "only {} pairs found", cases.len());
    let program =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/sameness.py")).unwrap();
    let expected: Vec<Option<(usize, usize)>> = run_python(&program, &cases);
    let mut mismatches = Vec::new();
    for ((name, got), want) in ours.iter().zip(&expected) {
        if got != want {
            mismatches.push(format!("{name}: ours {got:?}, python {want:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{} of {} disagree:\n{}", mismatches.len(), ours.len(), mismatches.join("\n"));
    let verdict = |name: &str| ours.iter().find(|(n, _)| n == name).map(|(_, g)| g.is_some());
    // The examples.
    assert_eq!(verdict("Olmo2RMSNorm.forward"), Some(true));
    assert_eq!(verdict("MistralMLP.forward"), Some(false));
    assert_eq!(verdict("LlamaMLP.forward"), Some(false));
    assert_eq!(verdict("MistralMLP"), Some(false));
    let same = ours.iter().filter(|(_, g)| g.is_none()).count();
    eprintln!("{} pairs: {same} same, {} differ", ours.len(), ours.len() - same);
}
