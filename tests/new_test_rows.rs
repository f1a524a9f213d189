//! `patchgen new`, protocol phase 6: the new model's rows in the project's
//! test tables, copied from the sibling's. A small project of our own (a
//! qwen3 template, test tables in the three shapes VeOmni uses: keyword
//! `pytest.param(..., id=)`, a dataclass `Case(...)` with
//! `ids=[c.case_id ...]`, positional `pytest.param` with comments, plus a
//! tuple table) over the real transformers 5.9.0 wheel. What was written is
//! read back with python3's `ast` (tests/new/rows_oracle.py) and difflib;
//! the project's ruff checks and formats it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestEnv;

const PYPROJECT: &str = include_str!("new/pyproject.toml");
const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/new/rows_oracle.py");

const TEMPLATE: &str = r#""""The qwen3 template: no patches (the tables are what these tests are about)."""

from patchgen import PatchConfig


config = PatchConfig(
    source_module="transformers.models.qwen3.modeling_qwen3",
    target_file="patched_modeling_qwen3_gpu.py",
    description="Qwen3 test template",
)
"#;

const INIT: &str = "from ..registry import MODELING_REGISTRY\n\n\n@MODELING_REGISTRY.register(\"qwen3\")\ndef register(architecture):\n    return None\n";

const PATCH_TABLE: &str = r#"import pytest


_DEFAULT_RTOL = 1e-2
_DEFAULT_ATOL = 1e-2

TEST_CASES = [
    pytest.param(
        "./tests/toy_config/llama31_toy/config.json",
        False,
        _DEFAULT_RTOL,
        _DEFAULT_ATOL,
        id="llama3_1",
    ),
    pytest.param(
        "./tests/toy_config/qwen3_toy/config.json",
        False,
        # qwen3 drifts in bfloat16: a wider envelope.
        0.05,
        0.05,
        id="qwen3",
    ),
    pytest.param(
        "./tests/toy_config/qwen2_toy/config.json",
        False,
        _DEFAULT_RTOL,
        _DEFAULT_ATOL,
        id="qwen2",
    ),
]


@pytest.mark.parametrize("config_path, is_moe, rtol, atol", TEST_CASES)
def test_models_patch_fwd_bwd(request, config_path, is_moe, rtol, atol):
    case_id = request.node.callspec.id
    if case_id == "qwen3":
        return
"#;

const LOGITS_TABLE: &str = r#"import os
from dataclasses import dataclass, field
from typing import Optional

import pytest


@dataclass(frozen=True)
class Case:
    case_id: str
    toy_config_dir: str
    arch: str
    kind: str
    attn_implementation: str = "eager"
    dtype: str = "float32"
    forward_attr: Optional[str] = None
    config_overrides: dict = field(default_factory=dict)


def _toy(name: str) -> str:
    return os.path.join("tests", "toy_config", name)


CASES = [
    Case("qwen2-eager", _toy("qwen2_toy"), "Qwen2ForCausalLM", "causal_lm"),
    Case("qwen3-eager", _toy("qwen3_toy"), "Qwen3ForCausalLM", "causal_lm"),
    Case(
        "qwen3-fa2",
        _toy("qwen3_toy"),
        "Qwen3ForCausalLM",
        "causal_lm",
        attn_implementation="flash_attention_2",
        dtype="bfloat16",
    ),
    Case("qwen3_moe-eager", _toy("qwen3_moe_toy"), "Qwen3MoeForCausalLM", "causal_lm"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.case_id for c in CASES])
def test_logits_bitwise_equal_v5(case):
    assert case.kind
"#;

const E2E_TABLE: &str = r#"import pytest


_DEFAULT_RTOL = 1e-1
_DEFAULT_ATOL = 1e-1

text_test_cases = [
    pytest.param(
        "qwen3",
        "./tests/toy_config/qwen3_toy",
        False,  # is_moe
        _DEFAULT_RTOL,
        _DEFAULT_ATOL,
        # qwen3 caps sequence parallelism at 2.
        2,
        None,  # max_ep_size
    ),
    pytest.param(
        "qwen2",
        "./tests/toy_config/qwen2_toy",
        False,  # is_moe
        _DEFAULT_RTOL,
        _DEFAULT_ATOL,
        None,  # max_sp_size
        None,  # max_ep_size
    ),
    pytest.param(
        "llama3.1",
        "./tests/toy_config/llama31_toy",
        False,  # is_moe
        _DEFAULT_RTOL,
        _DEFAULT_ATOL,
        None,  # max_sp_size
        None,  # max_ep_size
    ),
]

TUPLES = [
    ("qwen2", 1),
    ("qwen3", 2),
]


@pytest.mark.parametrize("model_name, config_path, is_moe, rtol, atol, max_sp_size, max_ep_size", text_test_cases)
def test_text_parallel_align(model_name, config_path, is_moe, rtol, atol, max_sp_size, max_ep_size):
    assert model_name


@pytest.mark.parametrize("name, n", TUPLES)
def test_tuples(name, n):
    assert n
"#;

const TABLES: [&str; 3] = [
    "tests/models/test_models_patch.py",
    "tests/models/test_models_logits_equal_v5.py",
    "tests/e2e/test_e2e_parallel.py",
];

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn project(tables: [&str; 3]) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let toy = |t: &str| format!("{{\"model_type\": \"{t}\"}}\n");
    let (q3, q2, llama, q3moe) = (toy("qwen3"), toy("qwen2"), toy("llama"), toy("qwen3_moe"));
    common::write_files(
        &root,
        &[
            ("pyproject.toml", PYPROJECT),
            ("pkg/__init__.py", ""),
            ("pkg/models/__init__.py", ""),
            ("pkg/models/registry.py", "MODELING_REGISTRY = None\n"),
            ("pkg/models/qwen3/__init__.py", INIT),
            ("pkg/models/qwen3/qwen3_gpu_patch_gen_config.py", TEMPLATE),
            ("tests/__init__.py", ""),
            ("tests/toy_config/qwen3_toy/config.json", &q3),
            ("tests/toy_config/qwen2_toy/config.json", &q2),
            ("tests/toy_config/llama31_toy/config.json", &llama),
            ("tests/toy_config/qwen3_moe_toy/config.json", &q3moe),
            (TABLES[0], tables[0]),
            (TABLES[1], tables[1]),
            (TABLES[2], tables[2]),
        ],
    );
    Project { _dir: dir, root }
}

fn new(p: &Project, args: &[&str]) -> common::Output {
    let env = TestEnv::get();
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    env.patchgen(&p.root, &env.transformers().to_string_lossy(), &all)
}

fn read(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The tables of a file as python3's `ast` reads them.
fn oracle(path: &Path) -> serde_json::Value {
    let out = Command::new("python3").arg(ORACLE).arg(path).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The `-`/`+` lines python3's difflib finds between two texts.
fn diff_lines(old: &str, new: &str) -> (usize, Vec<String>) {
    let script = "import difflib, json, sys\nold, new = json.load(sys.stdin)\nd = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm='', n=0))\nprint(json.dumps([sum(1 for l in d if l.startswith('-') and not l.startswith('---')), [l[1:] for l in d if l.startswith('+') and not l.startswith('+++')]]))";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(serde_json::to_string(&(old, new)).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ruff(p: &Project, args: &[&str]) {
    let out = Command::new(TestEnv::get().ruff_dir.join("ruff")).args(args).current_dir(&p.root).output().unwrap();
    assert!(
        out.status.success(),
        "ruff {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rows of `table` naming `model` (a string equal to it, starting an id
/// with `-`, or a path through its toy directory), by position.
fn rows_of<'a>(tables: &'a serde_json::Value, table: &str, model: &str) -> Vec<(usize, &'a serde_json::Value)> {
    tables[table]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r["strings"].as_array().unwrap().iter().any(|s| {
                let s = s.as_str().unwrap();
                s == model || s.starts_with(&format!("{model}-")) || s.split('/').any(|c| c == format!("{model}_toy"))
            })
        })
        .collect()
}

#[test]
fn rows_in_each_table_shape_after_the_siblings() {
    let p = project([PATCH_TABLE, LOGITS_TABLE, E2E_TABLE]);
    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);

    // Only added lines, the project's ruff satisfied, and the file parses.
    let originals = [PATCH_TABLE, LOGITS_TABLE, E2E_TABLE];
    for (rel, old) in TABLES.iter().zip(originals) {
        let (removed, added) = diff_lines(old, &read(&p, rel));
        assert_eq!(removed, 0, "{rel}: only added lines");
        assert!(!added.is_empty(), "{rel}: rows added");
        assert!(!added.iter().any(|l| l.contains("drifts") || l.contains("caps sequence")), "{rel}: {added:?}");
    }
    ruff(&p, &["check", "--quiet", TABLES[0], TABLES[1], TABLES[2]]);
    ruff(&p, &["format", "--check", "--quiet", TABLES[0], TABLES[1], TABLES[2]]);

    // pytest.param with id=: right after qwen3's row, the widened tolerance reset to the table's defaults.
    let t = oracle(&p.root.join(TABLES[0]));
    let q3 = rows_of(&t, "TEST_CASES", "qwen3");
    let m = rows_of(&t, "TEST_CASES", "mistral");
    assert_eq!(t["TEST_CASES"].as_array().unwrap().len(), 4);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, q3[0].0 + 1, "right after the sibling's row");
    let row = m[0].1;
    assert_eq!(row["args"][0], "'./tests/toy_config/mistral_toy/config.json'");
    assert_eq!(row["args"][1], "False");
    assert_eq!(row["args"][2], "_DEFAULT_RTOL");
    assert_eq!(row["args"][3], "_DEFAULT_ATOL");
    assert_eq!(row["kw"]["id"], "'mistral'");
    assert!(out.stdout.contains("reset rtol: 0.05 → _DEFAULT_RTOL"), "{}", out.stdout);
    assert!(out.stdout.contains("`case_id == \"qwen3\"` singles out qwen3"), "{}", out.stdout);

    // Case(...) rows: both of qwen3's, after its last, renamed in id, toy and class.
    let t = oracle(&p.root.join(TABLES[1]));
    let q3 = rows_of(&t, "CASES", "qwen3");
    let m = rows_of(&t, "CASES", "mistral");
    assert_eq!(m.iter().map(|r| r.0).collect::<Vec<_>>(), [q3.last().unwrap().0 + 1, q3.last().unwrap().0 + 2]);
    let ids: Vec<&str> = m.iter().map(|r| r.1["args"][0].as_str().unwrap().trim_matches('\'')).collect();
    assert_eq!(ids, ["mistral-eager", "mistral-fa2"]);
    for (_, r) in &m {
        assert_eq!(r["args"][1], "_toy('mistral_toy')");
        assert_eq!(r["args"][2], "'MistralForCausalLM'");
    }
    assert_eq!(m[1].1["kw"]["attn_implementation"], "'flash_attention_2'");
    // qwen3_moe's row is not qwen3's.
    assert_eq!(rows_of(&t, "CASES", "mistral_moe").len(), 0);
    assert_eq!(t["CASES"].as_array().unwrap().len(), 6);

    // Positional pytest.param: is_moe and comments kept, a value only the
    // sibling has kept with a TODO, its comment dropped.
    let text = read(&p, TABLES[2]);
    let t = oracle(&p.root.join(TABLES[2]));
    let m = rows_of(&t, "text_test_cases", "mistral");
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, 1, "after qwen3's row");
    let args: Vec<&str> = m[0].1["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(
        args,
        ["'mistral'", "'./tests/toy_config/mistral_toy'", "False", "_DEFAULT_RTOL", "_DEFAULT_ATOL", "2", "None"]
    );
    let lines: Vec<&str> = text.lines().collect();
    let [first, last] = [m[0].1["lines"][0].as_u64().unwrap() as usize, m[0].1["lines"][1].as_u64().unwrap() as usize];
    let row_text = lines[first - 1..last].join("\n");
    assert!(row_text.contains("False,  # is_moe"), "{row_text}");
    assert!(row_text.contains("# TODO(patchgen new): `max_sp_size` is 2 as for qwen3 (most rows: None)"), "{row_text}");
    // The tuple table.
    let m = rows_of(&t, "TUPLES", "mistral");
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, 2);
    assert_eq!(m[0].1["args"][1], "2");

    // The phase-7 commands name the ids python reads in the files.
    for cmd in [
        "pytest tests/models/test_models_patch.py::test_models_patch_fwd_bwd -k \"mistral\" -v",
        "pytest tests/models/test_models_logits_equal_v5.py::test_logits_bitwise_equal_v5 -k \"mistral-eager or mistral-fa2\" -v",
        "pytest tests/e2e/test_e2e_parallel.py::test_text_parallel_align -k \"mistral\" -v",
        "pytest tests/e2e/test_e2e_parallel.py::test_tuples -k \"mistral\" -v",
    ] {
        assert!(out.stdout.contains(cmd), "{cmd}\n{}", out.stdout);
    }

    // A second run does not add the rows again: new refuses the existing
    // model directory before anything else.
    let again = new(&p, &["mistral"]);
    assert_ne!(again.code, 0);
}

#[test]
fn dry_run_shows_the_rows_and_writes_nothing() {
    let p = project([PATCH_TABLE, LOGITS_TABLE, E2E_TABLE]);
    let out = new(&p, &["mistral", "--dry-run"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("would add 1 row(s) to TEST_CASES from qwen3"), "{}", out.stdout);
    assert!(out.stdout.contains("    +         \"./tests/toy_config/mistral_toy/config.json\","), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "    +     Case(\"mistral-eager\", _toy(\"mistral_toy\"), \"MistralForCausalLM\", \"causal_lm\"),"
        )
    );
    for (rel, old) in TABLES.iter().zip([PATCH_TABLE, LOGITS_TABLE, E2E_TABLE]) {
        assert_eq!(read(&p, rel), old);
    }
    assert!(!p.root.join("pkg/models/mistral").exists());
}

#[test]
fn a_sibling_without_rows_gets_none_and_new_says_so() {
    // No qwen3 row anywhere (and no other reference model in the project).
    let start = LOGITS_TABLE.find("    Case(\"qwen3-eager\"").unwrap();
    let end = LOGITS_TABLE.find("]\n\n\n@pytest").unwrap();
    let logits = format!("{}{}", &LOGITS_TABLE[..start], &LOGITS_TABLE[end..]);
    let patch = "import pytest\n\n\nTEST_CASES = [\n    pytest.param(\"./tests/toy_config/qwen2_toy/config.json\", False, id=\"qwen2\"),\n]\n\n\n@pytest.mark.parametrize(\"config_path, is_moe\", TEST_CASES)\ndef test_models_patch_fwd_bwd(config_path, is_moe):\n    assert config_path\n";
    let e2e = "import pytest\n\n\nTUPLES = [\n    (\"qwen2\", 1),\n]\n\n\n@pytest.mark.parametrize(\"name, n\", TUPLES)\ndef test_tuples(name, n):\n    assert n\n";
    let p = project([patch, &logits, e2e]);
    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for (rel, old) in TABLES.iter().zip([patch, logits.as_str(), e2e]) {
        assert_eq!(read(&p, rel), old, "{rel} untouched");
        assert!(out.stdout.contains(&format!("{rel}: no row — no row for qwen3 in any table")), "{}", out.stdout);
    }
    // The model itself is written.
    assert!(p.root.join("pkg/models/mistral/mistral_gpu_patch_gen_config.py").is_file());
}

#[test]
fn a_table_that_does_not_parse_stops_new_before_anything_is_written() {
    let broken = E2E_TABLE.replace("(\"qwen3\", 2),", "(\"qwen3\", 2)),");
    assert_ne!(broken, E2E_TABLE);
    let p = project([PATCH_TABLE, LOGITS_TABLE, &broken]);
    // Where python3 says the error is.
    let py = Command::new("python3")
        .args(["-c", "import ast, sys\ntry:\n    ast.parse(open(sys.argv[1]).read())\nexcept SyntaxError as e:\n    print(e.lineno)"])
        .arg(p.root.join(TABLES[2]))
        .output()
        .unwrap();
    let line: usize = String::from_utf8_lossy(&py.stdout).trim().parse().expect("python3 reports a line");
    let out = new(&p, &["mistral"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let at = format!("{}:", p.root.join(TABLES[2]).display());
    let msg = out.stderr.lines().find(|l| l.contains(&at)).unwrap_or_else(|| panic!("{}", out.stderr));
    let reported: usize = msg[msg.find(&at).unwrap() + at.len()..].split(':').next().unwrap().parse().unwrap();
    assert_eq!(reported, line, "{msg}");
    assert!(msg.contains("does not parse"), "{msg}");
    assert!(!p.root.join("pkg/models/mistral").exists(), "nothing written");
    assert!(!p.root.join("tests/toy_config/mistral_toy").exists(), "nothing written");
    assert_eq!(read(&p, TABLES[0]), PATCH_TABLE);
    assert_eq!(read(&p, TABLES[1]), LOGITS_TABLE);
}
