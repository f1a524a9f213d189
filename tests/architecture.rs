//! The layering of the workspace (`docs/architecture.md`), checked from
//! `cargo metadata` and the sources: no library crate depends on the
//! binary, no library mentions clap outside its `clap` feature, and the
//! dependency picture in the doc is the one the manifests give.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Workspace crate → its normal (non-dev, non-build) workspace dependencies.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| names.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(n) = todo.pop() {
        for d in graph.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn the_workspace_has_the_binary_on_top() {
    let g = graph();
    assert!(g.contains_key("patchgen"), "the binary crate is in the workspace");
    let libraries: Vec<&String> = g.keys().filter(|n| n.as_str() != "patchgen").collect();
    assert!(libraries.len() >= 8, "the library crates are members: {libraries:?}");
    for lib in libraries {
        assert!(!reachable(&g, lib).contains("patchgen"), "{lib} depends (directly or not) on the binary crate");
    }
}

#[test]
fn the_doc_shows_the_real_graph() {
    let g = graph();
    let mut mermaid = String::from("```mermaid\ngraph TD\n");
    for (from, deps) in &g {
        for d in deps {
            mermaid.push_str(&format!("  {from} --> {d}\n"));
        }
    }
    mermaid.push_str("```\n");
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let (begin, end) = ("<!-- architecture-graph:begin -->\n", "<!-- architecture-graph:end -->");
    let start = doc.find(begin).expect("begin marker") + begin.len();
    let stop = doc.find(end).expect("end marker");
    assert_eq!(&doc[start..stop], mermaid, "docs/architecture.md's graph is stale; the real one is:\n{mermaid}");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn libraries_mention_clap_only_behind_their_feature() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    assert!(!files.is_empty());
    let mut offending = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let mentions = code.contains("clap") || code.starts_with("#[arg(") || code.starts_with("#[command(");
            if mentions && !code.starts_with("#[cfg_attr(feature = \"clap\"") {
                offending.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(offending.is_empty(), "clap outside a `clap` feature:\n{}", offending.join("\n"));
}

#[test]
fn libraries_never_name_the_binary_crate() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    let offending: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("patchgen::"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(offending.is_empty(), "library files naming `patchgen::`: {offending:?}");
}

#[test]
fn patchgen_variables_are_read_by_the_settings_only() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    let settings = root().join("crates/patchgen_core/src/settings");
    let offending: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&settings))
        .filter(|f| !f.file_name().is_some_and(|n| n.to_string_lossy().ends_with("tests.rs")))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            // Test modules at the end of a file may set variables for their cases.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            code.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("\"PATCHGEN_"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(offending.is_empty(), "PATCHGEN_* read outside patchgen_core::settings: {offending:?}");
}
