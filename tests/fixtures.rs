//! Fixture cases (`tests/fixtures/<case>/`): our own configs whose expected
//! `.py`/`.diff` were produced by the reference tool. For each case, in a
//! temporary copy: `--check` passes on the expected files; regenerating
//! from scratch with `--all --diff` reproduces them byte for byte; each
//! config generated alone gives the same bytes as in `--all`.
//!
//! Needs `ruff` 0.13.2 (`PATCHGEN_TEST_RUFF`, else `ruff` on PATH) and, for
//! the `real_*` cases, the transformers 5.9.0 wheel
//! (`PATCHGEN_TEST_TRANSFORMERS`: the `.whl` file or its unpacked
//! directory). `scripts/test-env.sh` fetches both; see the README.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn case_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Files under `generated/` directories of a tree, relative to it.
fn generated_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in walk(root) {
        if entry.components().any(|c| c.as_os_str() == "generated")
            && entry.extension().is_some_and(|e| e == "py" || e == "diff")
            && entry.file_name().is_some_and(|n| n != "__init__.py")
        {
            out.push(entry.strip_prefix(root).expect("under root").to_path_buf());
        }
    }
    out.sort();
    out
}

/// The upstream file a real case's `.diff` was made against, from its header.
fn diff_source_module(diff: &str) -> String {
    let first = diff.lines().next().expect("diff header");
    first.trim_start_matches("--- a/").to_string()
}

/// Real-transformers cases keep only the `.diff`: rebuild the expected `.py`
/// by applying it to the wheel's file.
fn materialise_real_case(dir: &Path, transformers: &Path) {
    for rel in generated_files(dir) {
        if rel.extension().is_some_and(|e| e == "diff") {
            let diff = std::fs::read_to_string(dir.join(&rel)).unwrap();
            let upstream = read_upstream(transformers, &diff_source_module(&diff));
            let py = apply_unified_diff(&upstream, &diff);
            std::fs::write(dir.join(rel.with_extension("py")), py).unwrap();
        }
    }
}

fn run_case(name: &str) {
    let env = TestEnv::get();
    let real = name.starts_with("real_");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_tree(&case_dir(name), &dir);
    let pythonpath = if real {
        let tf = env.transformers();
        materialise_real_case(&dir, &tf);
        format!("{}:{}", dir.display(), tf.display())
    } else {
        format!("{}:{}", dir.display(), dir.join("upstream").display())
    };
    let expected: Vec<(PathBuf, Vec<u8>)> = generated_files(&dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect();
    assert!(!expected.is_empty(), "{name}: no expected files");

    // 1. The drift gate accepts the reference's files.
    let out = env.patchgen(&dir, &pythonpath, &["--check"]);
    assert_eq!(out.code, 0, "{name}: --check failed:\n{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("All generated files are up to date."), "{}", out.stdout);

    // 2. Regenerating from nothing reproduces them byte for byte.
    for (rel, _) in &expected {
        std::fs::remove_file(dir.join(rel)).unwrap();
    }
    let out = env.patchgen(&dir, &pythonpath, &["--all", "--diff"]);
    assert_eq!(out.code, 0, "{name}: --all --diff failed:\n{}{}", out.stdout, out.stderr);
    for (rel, bytes) in &expected {
        let got = std::fs::read(dir.join(rel)).unwrap_or_default();
        if &got != bytes {
            panic!("{name}: {} differs from the reference's output:\n{}", rel.display(), first_difference(bytes, &got));
        }
    }

    // 3. One config at a time gives the same bytes (no dependence on order).
    let list = env.patchgen(&dir, &pythonpath, &["--list"]);
    let modules: Vec<String> =
        list.stdout.lines().filter_map(|l| l.trim().strip_prefix("• ").map(str::to_string)).collect();
    assert!(!modules.is_empty(), "{name}: --list found nothing:\n{}", list.stdout);
    for module in &modules {
        // Inside the project, so ruff applies the same settings.
        let out_dir = dir.join("single_out");
        let _ = std::fs::remove_dir_all(&out_dir);
        let out = env.patchgen(&dir, &pythonpath, &[module, "-o", out_dir.to_str().unwrap(), "--diff"]);
        assert_eq!(out.code, 0, "{name}: {module} alone failed:\n{}{}", out.stdout, out.stderr);
        for entry in std::fs::read_dir(&out_dir).unwrap() {
            let path = entry.unwrap().path();
            let fname = path.file_name().unwrap().to_owned();
            let (_, bytes) = expected
                .iter()
                .find(|(rel, _)| rel.file_name() == Some(&fname))
                .unwrap_or_else(|| panic!("{name}: unexpected output {}", path.display()));
            assert!(
                std::fs::read(&path).unwrap() == *bytes,
                "{name}: {module} alone differs for {}",
                fname.to_string_lossy()
            );
        }
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_case(stringify!($name));
            }
        )*
    };
}

cases!(
    decorators_basic,
    replacement_kwarg,
    imports_and_blocks,
    helpers,
    exclude_and_all,
    cross_config,
    external_and_init,
    method_injection_quirks,
    diff_final_blank_line,
    in_project_source,
    real_llama,
    real_qwen3_moe,
    real_qwen2_vl,
);

#[test]
fn every_fixture_directory_has_a_test() {
    let listed = [
        "decorators_basic",
        "replacement_kwarg",
        "imports_and_blocks",
        "helpers",
        "exclude_and_all",
        "cross_config",
        "external_and_init",
        "method_injection_quirks",
        "diff_final_blank_line",
        "in_project_source",
        "real_llama",
        "real_qwen3_moe",
        "real_qwen2_vl",
        "lint",     // lint fixture projects: tests/lint.rs runs them
        "semantic", // the walker fixture: tests/semantic_walkers.rs reads it
    ];
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // tests/lint.rs owns tests/fixtures/lint.
            if name == "lint" {
                continue;
            }
            assert!(listed.contains(&name.as_str()), "fixture {name} has no test case");
        }
    }
}

/// Issue 16, point 2 (the notes themselves are the `cli` branch's): two
/// configs injecting the same method — `in_project_source`'s GPU config
/// and its `deepcopy` NPU config, as arcing-mt's qwen4_exp gpu/npu — give
/// two `check -v` notes that name their own config.
#[test]
fn injected_method_notes_name_their_config() {
    let env = TestEnv::get();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in_project_source");
    copy_tree(&case_dir("in_project_source"), &dir);
    let pythonpath = format!("{}:{}", dir.display(), dir.join("upstream").display());
    let out = env.patchgen(&dir, &pythonpath, &["--check", "-v"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let notes: Vec<&str> = out.stderr.lines().filter(|l| l.contains("PGI001")).collect();
    assert_eq!(notes.len(), 2, "{}", out.stderr);
    for module in ["pkg.omni.omni_gpu_patch_gen_config", "pkg.omni.omni_npu_patch_gen_config"] {
        let note = notes.iter().find(|l| l.ends_with(&format!("[{module}]"))).unwrap_or_else(|| {
            panic!("no note names {module}:\n{}", out.stderr);
        });
        assert!(note.contains("injected: OmniModel.reset"), "{note}");
    }
}
