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

/// The library sources as shipped: every `.rs` file under `crates/*/src`
/// except test files (`tests.rs`, `tests/`), each cut at its first
/// `#[cfg(test)]` (test modules sit at the end of a file), comment lines
/// blanked; with their paths.
fn library_code() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .filter(|f| !f.components().any(|c| c.as_os_str() == "tests"))
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: Vec<&str> = code.lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect();
            (f, code.join("\n"))
        })
        .collect()
}

/// `file:line: text` of every line of the library code matching `hit`,
/// outside the files `allowed` accepts.
fn offending_lines(hit: impl Fn(&str) -> bool, allowed: impl Fn(&Path) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (f, code) in library_code() {
        if allowed(&f) {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            if hit(line) {
                out.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn libraries_read_the_environment_only_in_the_settings() {
    let settings = root().join("crates/patchgen_core/src/settings");
    // `std::env::var`, `var_os`, `vars`, `vars_os`, however imported, and
    // the `from_env()` constructors of dependencies that read it themselves.
    let reads = |l: &str| l.contains("env::var") || l.contains("::from_env()");
    let offending = offending_lines(reads, |f| f.starts_with(&settings));
    assert!(
        offending.is_empty(),
        "libraries read the process environment (take a `patchgen_core::settings::Env`):\n{}",
        offending.join("\n")
    );
}

#[test]
fn libraries_deny_printing() {
    let lints = "#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]";
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let lib = entry.unwrap().path().join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        if !text.lines().any(|l| l.trim() == lints) {
            missing.push(lib.display().to_string());
        }
    }
    assert!(missing.is_empty(), "library crates without `{lints}`: {missing:?}");
    // What clippy denies, also seen here (and `std::io::stdout()`/`stderr()`
    // written by hand): only the language server writes stdout, the protocol.
    let server = root().join("crates/patchgen_server/src/transport.rs");
    let prints = |l: &str| {
        ["println!(", "print!(", "eprintln!(", "eprint!(", "dbg!(", "io::stdout()", "io::stderr()"]
            .iter()
            .any(|m| l.contains(m))
    };
    let offending = offending_lines(prints, |f| f == server);
    assert!(offending.is_empty(), "libraries print:\n{}", offending.join("\n"));
}

/// Every package's normal dependencies (any package), by name.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn only_the_binary_draws_progress_bars() {
    let deps = dependencies();
    assert!(deps["patchgen"].contains("indicatif"), "the binary draws the bars");
    let offending: Vec<&String> = deps
        .iter()
        .filter(|(name, d)| name.as_str() != "patchgen" && d.contains("indicatif"))
        .map(|(n, _)| n)
        .collect();
    assert!(
        offending.is_empty(),
        "libraries depending on indicatif (report through `patchgen_core::progress`): {offending:?}"
    );
}

#[test]
fn public_library_functions_return_typed_errors() {
    let mut offending = Vec::new();
    for (f, code) in library_code() {
        let mut rest = code.as_str();
        while let Some(at) = rest.find("pub fn ") {
            let sig = &rest[at..];
            let sig = &sig[..sig.find('{').unwrap_or(sig.len())];
            let compact: String = sig.split_whitespace().collect::<Vec<_>>().join(" ");
            if compact.contains("-> Result<") && compact.trim_end().ends_with(", String>") {
                offending.push(format!("{}: {compact}", f.display()));
            }
            rest = &rest[at + 7..];
        }
    }
    assert!(offending.is_empty(), "public functions returning `Result<_, String>`:\n{}", offending.join("\n"));
}

#[test]
fn libraries_start_no_python_but_pip() {
    let pip = root().join("crates/patchgen_core/src/survey/source.rs");
    let offending = offending_lines(|l| l.contains("Command::new(\"python"), |f| f == pip);
    assert!(
        offending.is_empty(),
        "configs are never executed, upstream modules never imported:\n{}",
        offending.join("\n")
    );
}

#[test]
fn every_command_starts_a_session() {
    let mut files = Vec::new();
    rust_files(&root().join("src/commands"), &mut files);
    let mut offending = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // `completions` prints a script and reads nothing; `server` speaks the protocol.
        let exempt = ["completions.rs", "server.rs", "mod.rs"];
        if f.file_name().is_some_and(|n| exempt.iter().any(|e| n == *e)) {
            continue;
        }
        if !text.contains("Session::") {
            offending.push(f.display().to_string());
        }
    }
    assert!(offending.is_empty(), "commands that do not start through `Session`: {offending:?}");
    let session = std::fs::read_to_string(root().join("src/session.rs")).unwrap();
    assert!(!session.contains("struct Console"), "one way to start a command");
}

#[test]
fn rules_keep_no_process_wide_state() {
    let rules = root().join("crates/patchgen_lint/src/rules");
    let state = |l: &str| {
        l.contains("thread_local!")
            || (l.contains("static ")
                && ["Mutex", "RwLock", "OnceLock", "LazyLock", "OnceCell", "Atomic", "Cell<"]
                    .iter()
                    .any(|t| l.contains(t)))
    };
    let offending: Vec<String> = offending_lines(state, |f| !f.starts_with(&rules));
    assert!(offending.is_empty(), "rules keep state across runs (use `Shared::memo`):\n{}", offending.join("\n"));
}
