//! `patchgen explain` (issue 25): the origin of one generated line, and the
//! causes of every hunk of a `.diff`. Expected lines come from the files
//! themselves (a text search in the config, the upstream module and the
//! generated file), never from patchgen's output; on VeOmni, an independent
//! Python `ast` reading of the configs checks every `patch` cause
//! (`tests/explain/registration.py`).

mod common;

use std::path::{Path, PathBuf};

use common::{MiniProject, TestEnv, toy_config};

const CONFIG: &str = "pkg/toy/toy_patch_gen_config.py";
const GENERATED: &str = "pkg/toy/generated/patched_toy.py";

fn body() -> String {
    toy_config(
        "config.add_import(\"collections\", names=[\"OrderedDict\"])\n\n\n\
         @config.override_method(\"Norm.forward\", description=\"double\")\n\
         def norm_forward(self, x):\n    \
             cache = OrderedDict()\n    \
             doubled = x * 2  # inserted\n    \
             return doubled + len(cache)\n",
    )
}

fn project() -> MiniProject {
    let p = MiniProject::new(&[("pkg/toy/__init__.py", ""), (CONFIG, &body())]);
    let out = p.run(&["generate", "pkg.toy.toy_patch_gen_config", "--diff"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    p
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("`{needle}` not in\n{text}")) + 1
}

fn json(out: &common::Output) -> serde_json::Value {
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn same_path(a: &serde_json::Value, b: &Path) -> bool {
    a.as_str().is_some_and(|a| Path::new(a).canonicalize().ok() == b.canonicalize().ok())
}

#[test]
fn a_line_added_to_an_override_is_that_config_line() {
    let p = project();
    let generated = p.read(GENERATED);
    let config = p.read(CONFIG);
    let line = line_of(&generated, "doubled = x * 2");
    let doc = json(&p.run(&["explain", &format!("{GENERATED}:{line}"), "--format", "json"]));
    assert_eq!(doc["command"], "explain");
    assert_eq!(doc["diagnostics"], serde_json::json!([]));
    let origin = &doc["origin"];
    assert_eq!(origin["kind"], "patch");
    assert!(same_path(&origin["path"], &p.path().join(CONFIG)), "{origin}");
    assert_eq!(origin["line"], line_of(&config, "doubled = x * 2"));
    assert_eq!(origin["target"], "Norm.forward");
    assert!(origin.get("rule").is_none(), "rule only for ruff-fix: {origin}");

    let text = p.run(&["explain", &format!("{GENERATED}:{line}")]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let expected = format!("{CONFIG}:{} (method_override Norm.forward)\n", line_of(&config, "doubled = x * 2"));
    assert_eq!(text.stdout, expected);
}

#[test]
fn an_unpatched_line_is_its_upstream_line() {
    let p = project();
    let generated = p.read(GENERATED);
    let upstream = p.read("upstream/toylib/modeling_toy.py");
    let line = line_of(&generated, "self.eps = eps");
    let doc = json(&p.run(&["explain", &format!("{GENERATED}:{line}"), "--format", "json"]));
    let origin = &doc["origin"];
    assert_eq!(origin["kind"], "upstream");
    assert!(same_path(&origin["path"], &p.path().join("upstream/toylib/modeling_toy.py")), "{origin}");
    let at = origin["line"].as_u64().unwrap() as usize;
    assert_eq!(upstream.lines().nth(at - 1).unwrap().trim(), generated.lines().nth(line - 1).unwrap().trim());
    assert_eq!(origin["target"], serde_json::Value::Null);
}

#[test]
fn an_added_import_is_its_add_import_call() {
    let p = project();
    let generated = p.read(GENERATED);
    let line = line_of(&generated, "from collections import OrderedDict");
    let doc = json(&p.run(&["explain", &format!("{GENERATED}:{line}"), "--format", "json"]));
    assert_eq!(doc["origin"]["kind"], "import");
    assert_eq!(doc["origin"]["line"], line_of(&p.read(CONFIG), "config.add_import("));
    assert_eq!(doc["origin"]["target"], "collections");
}

/// `@@ -a,b +c,d @@` lines of a `.diff`.
fn hunk_headers(diff: &str) -> Vec<String> {
    diff.lines().filter(|l| l.starts_with("@@ ")).map(str::to_string).collect()
}

#[test]
fn every_hunk_has_its_causes() {
    let p = project();
    let diff = p.read("pkg/toy/generated/patched_toy.diff");
    let doc = json(&p.run(&["explain", "--format", "json"]));
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["config"], "pkg.toy.toy_patch_gen_config");
    let hunks = files[0]["hunks"].as_array().unwrap();
    let headers: Vec<String> = hunks
        .iter()
        .map(|h| {
            let range = |s: &serde_json::Value, n: &serde_json::Value| {
                if n == 1 { format!("{s}") } else { format!("{s},{n}") }
            };
            format!("@@ -{} +{} @@", range(&h["old_start"], &h["old_lines"]), range(&h["new_start"], &h["new_lines"]))
        })
        .collect();
    assert_eq!(headers, hunk_headers(&diff));
    let config = p.read(CONFIG);
    let mut kinds = Vec::new();
    for h in hunks {
        let causes = h["causes"].as_array().unwrap();
        assert!(!causes.is_empty());
        for c in causes {
            assert_ne!(c["kind"], "unexplained", "{h}");
            for key in ["kind", "path", "line", "target", "rule"] {
                assert!(c.get(key).is_some(), "{key} missing in {c}");
            }
            if c["kind"] == "patch" {
                // Inside the override's registration: its decorator to its last line.
                let line = c["line"].as_u64().unwrap() as usize;
                assert!(
                    (line_of(&config, "@config.override_method")..=line_of(&config, "return doubled")).contains(&line),
                    "{c}"
                );
            }
            kinds.push(c["kind"].as_str().unwrap().to_string());
        }
    }
    for kind in ["header", "patch", "import"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} among {kinds:?}");
    }

    let text = p.run(&["explain"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.starts_with(&format!("{GENERATED} [pkg.toy.toy_patch_gen_config]\n@@ ")), "{}", text.stdout);
    let override_cause =
        format!("    patch Norm.forward at {CONFIG}:{} (method_override)\n", line_of(&config, "cache = OrderedDict()"));
    assert!(text.stdout.contains(&override_cause), "{}", text.stdout);

    let github = p.run(&["explain", "--format", "github"]);
    assert_eq!(github.code, 0, "{}", github.stderr);
    let notices: Vec<&str> = github.stdout.lines().collect();
    assert_eq!(notices.len(), hunks.len());
    assert!(notices.iter().all(|n| n.starts_with(&format!("::notice file={GENERATED},line="))), "{notices:?}");
}

#[test]
fn a_line_nobody_generates_is_an_error() {
    let p = project();
    let out = p.run(&["explain", "pkg/toy/toy_patch_gen_config.py:3"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("no config generates this file"), "{}", out.stderr);
    let out = p.run(&["explain", &format!("{GENERATED}:100000")]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("the generated file has"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// VeOmni (issue 25's acceptance): `PATCHGEN_TEST_VEOMNI` = a VeOmni tree at
// d9774494 with its generated files up to date (copied, never written).

fn veomni() -> Option<PathBuf> {
    match std::env::var_os("PATCHGEN_TEST_VEOMNI") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("skipping: PATCHGEN_TEST_VEOMNI is not set");
            None
        }
    }
}

fn run_in(tree: &Path, args: &[&str]) -> common::Output {
    let env = TestEnv::get();
    env.patchgen(tree, &env.transformers().display().to_string(), args)
}

#[test]
fn veomni_every_hunk_is_explained_by_its_registration() {
    let Some(tree) = veomni() else { return };
    let copy = tempfile::tempdir().unwrap();
    common::copy_tree(&tree, copy.path());
    let out = run_in(copy.path(), &["explain", "--format", "json"]);
    let doc = json(&out);
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 29);
    let mut total = 0;
    let mut per_kind = std::collections::BTreeMap::<String, usize>::new();
    for f in files {
        let py = PathBuf::from(f["path"].as_str().unwrap());
        let diff = std::fs::read_to_string(py.with_extension("diff")).unwrap();
        let hunks = f["hunks"].as_array().unwrap();
        assert_eq!(hunks.len(), hunk_headers(&diff).len(), "{}", py.display());
        for h in hunks {
            total += 1;
            let mut kinds: Vec<&str> =
                h["causes"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
            kinds.sort();
            kinds.dedup();
            assert!(!kinds.contains(&"unexplained"), "{}: {h}", py.display());
            for k in kinds {
                *per_kind.entry(k.to_string()).or_default() += 1;
            }
        }
    }
    eprintln!("{total} hunks; per cause kind: {per_kind:?}");
    // Every `patch` cause lies in its target's registration (Python's `ast`).
    let python = std::env::var("PATCHGEN_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explain/registration.py");
    let mut child = std::process::Command::new(python)
        .arg(&script)
        .arg(copy.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), out.stdout.as_bytes()).unwrap();
    let checked = child.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{report}");
    eprintln!("{report}");
}

#[test]
fn veomni_a_line_inserted_into_an_override_is_that_config_line() {
    let Some(tree) = veomni() else { return };
    let copy = tempfile::tempdir().unwrap();
    common::copy_tree(&tree, copy.path());
    let rel = "veomni/models/transformers/qwen3/qwen3_gpu_patch_gen_config.py";
    let config_path = copy.path().join(rel);
    let config = std::fs::read_to_string(&config_path).unwrap();
    // A line in the body of the `Qwen3ForCausalLM.forward` override.
    let def = line_of(&config, "\"Qwen3ForCausalLM.forward\"");
    let lines: Vec<&str> = config.lines().collect();
    let at =
        (def..lines.len()).find(|&i| lines[i] == "    hidden_states = outputs.last_hidden_state").expect("a body line");
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    edited.insert(at, "    _ = outputs  # provenance probe, inserted by the test".to_string());
    std::fs::write(&config_path, edited.join("\n") + "\n").unwrap();
    let module = "veomni.models.transformers.qwen3.qwen3_gpu_patch_gen_config";
    let out = run_in(copy.path(), &["generate", module]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let generated_rel = "veomni/models/transformers/qwen3/generated/patched_modeling_qwen3_gpu.py";
    let generated = std::fs::read_to_string(copy.path().join(generated_rel)).unwrap();
    let line = line_of(&generated, "# provenance probe");
    let doc = json(&run_in(copy.path(), &["explain", &format!("{generated_rel}:{line}"), "--format", "json"]));
    assert_eq!(doc["origin"]["kind"], "patch");
    assert!(same_path(&doc["origin"]["path"], &config_path));
    assert_eq!(doc["origin"]["line"], at + 1);
    assert_eq!(doc["origin"]["target"], "Qwen3ForCausalLM.forward");

    // An unpatched upstream line.
    let line = line_of(&generated, "class Qwen3MLP(");
    let doc = json(&run_in(copy.path(), &["explain", &format!("{generated_rel}:{line}"), "--format", "json"]));
    assert_eq!(doc["origin"]["kind"], "upstream");
    let upstream = common::read_upstream(&TestEnv::get().transformers(), "transformers/models/qwen3/modeling_qwen3.py");
    let up = doc["origin"]["line"].as_u64().unwrap() as usize;
    assert_eq!(upstream.lines().nth(up - 1).unwrap().trim(), generated.lines().nth(line - 1).unwrap().trim());
}

// ---------------------------------------------------------------------------
// Findings located through the map.

#[test]
fn pg104_is_at_the_add_import_call() {
    // The module's misspelt name also appears earlier in the file (in a
    // comment here; in real configs, a correct import of a similar module).
    let config = toy_config(
        "config.add_import(\"toylib.modeling_tyo\", names=[\"Other\"])\nconfig.add_post_import_block(\"ALIAS = Other\")\n",
    )
        .replacen("from patchgen import PatchConfig\n", "# toylib.modeling_tyo: a typo, below\nfrom patchgen import PatchConfig\n", 1);
    let p = MiniProject::new(&[("pkg/toy/__init__.py", ""), (CONFIG, &config)]);
    let generated = p.run(&["generate", "pkg.toy.toy_patch_gen_config"]);
    assert_eq!(generated.code, 0, "{}", generated.stderr);
    let out = p.run(&["lint", "--select", "PG104", "--upstream", "upstream", "--no-cache", "--format", "json"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let found = doc["diagnostics"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let at = &found[0]["location"];
    assert!(at["path"].as_str().unwrap().ends_with(CONFIG), "{at}");
    assert_eq!(at["line"], line_of(&config, "config.add_import("));
    // The generated line, as related.
    let generated = p.read(GENERATED);
    let related = &found[0]["related"][0]["location"];
    assert!(related["path"].as_str().unwrap().ends_with(GENERATED), "{related}");
    assert_eq!(related["line"], line_of(&generated, "from toylib.modeling_tyo import Other"));
}

#[test]
fn f821_is_at_the_config_line_using_the_name() {
    let config = body().replace("return doubled + len(cache)", "return doubled + len(cache) + undefined_helper(x)");
    let p = MiniProject::new(&[("pkg/toy/__init__.py", ""), (CONFIG, &config)]);
    let out = p.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let d = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("F821"))
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(d["location"]["path"].as_str().unwrap().ends_with(CONFIG), "{d}");
    assert_eq!(d["location"]["line"], line_of(&config, "undefined_helper(x)"));
    let related = &d["related"][0]["location"];
    assert!(related["path"].as_str().unwrap().ends_with(GENERATED), "{related}");
}

#[test]
fn pg105_reports_a_hunk_nothing_accounts_for() {
    // A module-level call: codegen does not copy it, and no config line says so.
    let upstream = format!("{}\n\nprint(Norm)\n", common::MINI_UPSTREAM);
    let p = MiniProject::new(&[
        ("upstream/toylib/modeling_toy.py", &upstream),
        ("pkg/toy/__init__.py", ""),
        (CONFIG, &body()),
    ]);
    let generated = p.run(&["generate", "pkg.toy.toy_patch_gen_config", "--diff"]);
    assert_eq!(generated.code, 0, "{}", generated.stderr);
    let diff = p.read("pkg/toy/generated/patched_toy.diff");
    assert!(diff.contains("\n-print(Norm)\n"), "{diff}");

    let doc = json(&p.run(&["explain", "--format", "json"]));
    let hunks = doc["files"][0]["hunks"].as_array().unwrap();
    let unexplained: Vec<&serde_json::Value> =
        hunks.iter().filter(|h| h["causes"].as_array().unwrap().iter().any(|c| c["kind"] == "unexplained")).collect();
    assert_eq!(unexplained.len(), 1, "{hunks:?}");

    let out = p.run(&["lint", "--select", "PG105", "--upstream", "upstream", "--no-cache", "--format", "json"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let found = doc["diagnostics"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["code"], "PG105");
    let at = &found[0]["location"];
    assert!(at["path"].as_str().unwrap().ends_with(GENERATED), "{at}");
    // The hunk's first line of the generated file, as the `.diff` says (`+c` of `@@ -a,b +c,d @@`).
    let header = hunk_headers(&diff).into_iter().find(|h| {
        let old = h.split(' ').nth(1).unwrap().trim_start_matches('-');
        let (start, n) = old.split_once(',').map_or((old, "1"), |(s, n)| (s, n));
        let (start, n): (usize, usize) = (start.parse().unwrap(), n.parse().unwrap());
        let print_line = line_of(&upstream, "print(Norm)");
        (start..start + n).contains(&print_line)
    });
    let header = header.expect("the hunk deleting print(Norm)");
    let new_start: usize =
        header.split(' ').nth(2).unwrap().trim_start_matches('+').split(',').next().unwrap().parse().unwrap();
    let line = at["line"].as_u64().unwrap() as usize;
    assert!(line >= new_start && line <= new_start + 6, "{line} not in the hunk {header}");
    let related = &found[0]["related"][0];
    assert!(related["message"].as_str().unwrap().starts_with("nearest patch"), "{related}");
}

#[test]
fn a_drift_names_where_the_expected_text_comes_from() {
    let p = project();
    let edited = p.read(GENERATED).replace("doubled = x * 2  # inserted", "doubled = x * 3  # edited by hand");
    p.write(GENERATED, &edited);
    let out = p.run(&["check", "--no-cache", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let drift = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "PGD001" && d["location"]["path"].as_str().unwrap().ends_with(GENERATED))
        .unwrap_or_else(|| panic!("{doc}"));
    let related = drift["related"].as_array().unwrap();
    assert_eq!(related.len(), 1, "{related:?}");
    assert!(related[0]["location"]["path"].as_str().unwrap().ends_with(CONFIG), "{related:?}");
    assert_eq!(related[0]["location"]["line"], line_of(&p.read(CONFIG), "doubled = x * 2"));
    assert!(related[0]["message"].as_str().unwrap().contains("method_override Norm.forward"), "{related:?}");
}
