//! The result cache never changes a verdict (issue 15, acceptance 1).
//!
//! Two identical trees, A and B, go through the same random sequence of
//! changes: edits of a config, of a project module it imports, of the
//! upstream module and of what decides `Based on:`, of ruff settings
//! (the project's `[tool.ruff]`, a closer `ruff.toml` with an `extend`
//! chain, a `ruff.toml` in the directory above the project), of the ruff
//! binary (a wrapper that reports another version, or changes the output),
//! of a `RUFF_*` environment variable that changes ruff's output, of ruff's
//! user-level configuration (`~/.config/ruff/ruff.toml`), of `[tool.patchgen]`, of the checked-in `.py`/`.diff`; deletions and
//! restorations; rewrites of the same bytes. After every step `check` runs
//! on A with the cache and on B with `--no-cache`: same exit code, same
//! output (verdicts, drift diffs), modulo the trees' paths and timings.
//! Some steps run `check --fix` or `--all --diff` on both and compare the
//! trees too; some run two cached checks on A at once.
//!
//! Bounded: `PATCHGEN_CACHE_PROPTEST_CASES` cases (default 8) of at most
//! 8 steps; about 20 s on two cores.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const PYPROJECT_HEAD: &str = "[tool.patchgen]\nsearch_root = \"pkg\"\npackage_prefix = \"pkg\"\n";
const PROJECT_RUFF: &str = "\n[tool.ruff]\nline-length = 119\n\n[tool.ruff.lint]\nselect = [\"E\", \"F\", \"I\", \"W\"]\nignore = [\"E501\"]\n";

/// Unsorted imports (isort reorders them when `I` is selected), an unused
/// one (`F401` removes it unless ignored), a line that some line lengths
/// wrap: the ruff settings and binary decide the output.
const UPSTREAM: &str = "\"\"\"Toy upstream.\"\"\"\n\nimport os\nimport math\nimport sys\n\n\nclass Norm:\n    def __init__(self, eps):\n        self.eps = eps\n\n    def forward(self, x):\n        return x * math.sqrt(self.eps)\n\n\nclass Empty:\n    pass\n\n\ndef helper(x):\n    return os.path.join(str(x), \"first_component_name\", \"second_component_name\", \"third\")\n";

const SHARED: &str = "# Shared replacement (fixture).\ndef scaled_forward(self, x):\n    return x * self.eps\n";

const CONFIG: &str = "from patchgen import PatchConfig\nfrom pkg.toy.shared import scaled_forward\n\nconfig = PatchConfig(\n    source_module=\"toylib.modeling_toy\",\n    target_file=\"patched_toy.py\",\n)\n\nconfig.override_method(\"Norm.forward\", replacement=scaled_forward, description=\"scaled\")\n";

const NPU_CONFIG: &str = "from patchgen import PatchConfig\nfrom pkg.toy.toy_patch_gen_config import scaled_forward\n\nconfig = PatchConfig(\n    source_module=\"toylib.modeling_toy\",\n    target_file=\"patched_toy_npu.py\",\n    transformers_version=\"9.9.9\",\n)\n\nconfig.override_method(\"Norm.forward\", replacement=scaled_forward)\n\n\n@config.replace_function(\"helper\")\ndef fast_helper(x):\n    return os.path.join(str(x), \"a_rather_long_component_name\", \"another_component\")\n";

/// The files of a fresh tree, relative to its top (the project is `proj/`).
fn initial_files(real_ruff: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("proj/pyproject.toml", format!("{PYPROJECT_HEAD}{PROJECT_RUFF}")),
        ("proj/upstream/transformers/__init__.py", "__version__ = \"4.0.0\"\n".into()),
        ("proj/upstream/toylib/__init__.py", String::new()),
        ("proj/upstream/toylib/modeling_toy.py", UPSTREAM.into()),
        ("proj/pkg/__init__.py", String::new()),
        ("proj/pkg/toy/__init__.py", String::new()),
        ("proj/pkg/toy/shared.py", SHARED.into()),
        ("proj/pkg/toy/toy_patch_gen_config.py", CONFIG.into()),
        ("proj/pkg/toy/toy_npu_patch_gen_config.py", NPU_CONFIG.into()),
        ("bin/ruff", wrapper(real_ruff, 0)),
        ("shared.toml", "line-length = 50\n".into()),
    ]
}

/// The ruff "binary": 0 delegates, 1 reports another version, 2 also
/// formats to another line length.
fn wrapper(real: &Path, variant: u8) -> String {
    let script = wrapper_body(real, variant);
    // Every variant honours `RUFF_TEST_FORMAT_LL` (a `RUFF_*` variable that
    // changes the output, as ruff's own `RUFF_*` variables may).
    let env = format!(
        "if [ -n \"$RUFF_TEST_FORMAT_LL\" ] && [ \"$1\" = format ]; then shift; exec '{}' format --line-length \"$RUFF_TEST_FORMAT_LL\" \"$@\"; fi\n",
        real.display()
    );
    script.replacen("#!/bin/sh\n", &format!("#!/bin/sh\n{env}"), 1)
}

fn wrapper_body(real: &Path, variant: u8) -> String {
    let real = real.display();
    match variant {
        0 => format!("#!/bin/sh\nexec '{real}' \"$@\"\n"),
        1 => {
            format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'ruff 9.9.9'; exit 0; fi\nexec '{real}' \"$@\"\n")
        }
        // Formats differently, the same way whether ruff gets the text on
        // stdin or files (as a real ruff does: patchgen batches files).
        _ => format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'ruff 9.9.10'; exit 0; fi\nif [ \"$1\" = format ]; then shift; exec '{real}' format --line-length 30 \"$@\"; fi\nexec '{real}' \"$@\"\n"
        ),
    }
}

#[derive(Clone, Debug)]
enum Op {
    EditConfig(u8),
    EditShared(u8),
    EditUpstream(u8),
    EditVersion(u8),
    ProjectRuff(bool),
    CloserRuffToml(Option<u8>),
    SharedToml(u8),
    ParentRuffToml(Option<u8>),
    RuffBinary(u8),
    RuffEnv(Option<u8>),
    UserRuffToml(Option<u8>),
    ToolPatchgen(u8),
    EditChecked { diff: bool, how: u8 },
    Touch(u8),
    Delete(u8),
    Restore,
    Fix,
    GenerateAll,
    Concurrent,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3).prop_map(Op::EditConfig),
        (0u8..3).prop_map(Op::EditShared),
        (0u8..3).prop_map(Op::EditUpstream),
        (0u8..3).prop_map(Op::EditVersion),
        any::<bool>().prop_map(Op::ProjectRuff),
        proptest::option::of(0u8..3).prop_map(Op::CloserRuffToml),
        (0u8..3).prop_map(Op::SharedToml),
        proptest::option::of(0u8..3).prop_map(Op::ParentRuffToml),
        (0u8..3).prop_map(Op::RuffBinary),
        proptest::option::of(0u8..2).prop_map(Op::RuffEnv),
        proptest::option::of(0u8..2).prop_map(Op::UserRuffToml),
        (0u8..3).prop_map(Op::ToolPatchgen),
        (any::<bool>(), 0u8..4).prop_map(|(diff, how)| Op::EditChecked { diff, how }),
        (0u8..5).prop_map(Op::Touch),
        (0u8..4).prop_map(Op::Delete),
        Just(Op::Restore),
        Just(Op::Fix),
        Just(Op::GenerateAll),
        Just(Op::Concurrent),
    ]
}

struct Tree {
    top: tempfile::TempDir,
    real_ruff: PathBuf,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Tree {
    fn new(real_ruff: &Path) -> Tree {
        let top = tempfile::tempdir().unwrap();
        let t = Tree { top, real_ruff: real_ruff.to_path_buf() };
        for (rel, text) in initial_files(real_ruff) {
            t.write(rel, &text);
        }
        t.chmod_wrapper();
        std::fs::create_dir_all(t.path("home")).unwrap();
        t
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.top.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    fn remove(&self, rel: &str) {
        let _ = std::fs::remove_file(self.path(rel));
    }

    fn chmod_wrapper(&self) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.path("bin/ruff"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchgen"));
        cmd.args(args)
            .current_dir(self.path("proj"))
            .env_clear()
            .env("PATH", self.path("bin"))
            .env("PYTHONPATH", self.path("proj/upstream"))
            .env("HOME", self.path("home"))
            .env("NO_COLOR", "1");
        if let Some(ll) = self.read("ruff_env") {
            cmd.env("RUFF_TEST_FORMAT_LL", ll);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        let out = self.command(args).output().expect("run patchgen");
        self.finish(out)
    }

    fn finish(&self, out: std::process::Output) -> Run {
        let top = self.top.path().display().to_string();
        let clean = |b: &[u8]| {
            let s = String::from_utf8_lossy(b).replace(&top, "<TOP>");
            // Timings differ from run to run.
            s.lines()
                .map(|l| match l.rfind(" (") {
                    Some(i) if l.ends_with(" ms)") => l[..i].to_string(),
                    _ => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        Run { code: out.status.code().unwrap_or(-1), stdout: clean(&out.stdout), stderr: clean(&out.stderr) }
    }

    /// Every file of the tree but the cache, relative, with its bytes.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = common::walk(self.top.path())
            .into_iter()
            .filter(|p| !p.components().any(|c| c.as_os_str() == ".patchgen_cache"))
            .map(|p| {
                let rel = p.strip_prefix(self.top.path()).unwrap().display().to_string();
                (rel, std::fs::read(&p).unwrap())
            })
            .collect();
        out.sort();
        out
    }

    fn apply(&self, op: &Op) {
        let variant = |k: u8| ["", "  # v1", "  # v2"][k as usize % 3];
        match op {
            Op::EditConfig(k) => self.write(
                "proj/pkg/toy/toy_patch_gen_config.py",
                &match k {
                    0 => CONFIG.to_string(),
                    1 => CONFIG.replace("description=\"scaled\"", "description=\"scaled twice\""),
                    _ => format!("{CONFIG}config.add_import(\"os\", is_from_import=False)\n"),
                },
            ),
            Op::EditShared(k) => self.write(
                "proj/pkg/toy/shared.py",
                &SHARED.replace("x * self.eps", &format!("x * self.eps{}", ["", " * 2", " + 1"][*k as usize])),
            ),
            Op::EditUpstream(k) => self.write(
                "proj/upstream/toylib/modeling_toy.py",
                &UPSTREAM.replace("\"third\")", &format!("\"third\"){}", variant(*k))),
            ),
            Op::EditVersion(k) => {
                self.write("proj/upstream/transformers/__init__.py", &format!("__version__ = \"4.0.{k}\"\n"))
            }
            Op::ProjectRuff(on) => {
                let extra = self.tool_patchgen_extra();
                let ruff = if *on { PROJECT_RUFF } else { "" };
                self.write("proj/pyproject.toml", &format!("{PYPROJECT_HEAD}{extra}{ruff}"));
            }
            Op::CloserRuffToml(None) => self.remove("proj/pkg/toy/ruff.toml"),
            Op::CloserRuffToml(Some(k)) => self.write(
                "proj/pkg/toy/ruff.toml",
                &match k {
                    0 => "line-length = 60\n".to_string(),
                    1 => "extend = \"../../../shared.toml\"\n".to_string(),
                    _ => "[lint]\nselect = [\"E\", \"W\"]\n".to_string(),
                },
            ),
            Op::SharedToml(k) => self.write("shared.toml", &format!("line-length = {}\n", [50, 70, 30][*k as usize])),
            Op::ParentRuffToml(None) => self.remove("ruff.toml"),
            Op::ParentRuffToml(Some(k)) => {
                self.write("ruff.toml", &format!("line-length = {}\n", [40, 88, 20][*k as usize]))
            }
            Op::RuffBinary(k) => {
                // Replaced as an installer does: a new file renamed over the old.
                let tmp = self.path("bin/.ruff.new");
                std::fs::write(&tmp, wrapper(&self.real_ruff, *k)).unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::rename(&tmp, self.path("bin/ruff")).unwrap();
            }
            Op::RuffEnv(None) => self.remove("ruff_env"),
            Op::RuffEnv(Some(k)) => self.write("ruff_env", ["30", "60"][*k as usize]),
            // ruff's user-level configuration: used when no project settings
            // apply (after `ProjectRuff(false)`).
            Op::UserRuffToml(None) => self.remove("home/.config/ruff/ruff.toml"),
            Op::UserRuffToml(Some(k)) => {
                self.write("home/.config/ruff/ruff.toml", &format!("line-length = {}\n", [40, 70][*k as usize]))
            }
            Op::ToolPatchgen(k) => {
                let text = self.read("proj/pyproject.toml").unwrap_or_default();
                let has_ruff = text.contains("[tool.ruff]");
                let extra = ["", "ruff_extra_ignore = [\"F401\"]\n", "ruff_isolated = true\n"][*k as usize];
                let ruff = if has_ruff { PROJECT_RUFF } else { "" };
                self.write("proj/pyproject.toml", &format!("{PYPROJECT_HEAD}{extra}{ruff}"));
            }
            Op::EditChecked { diff, how } => {
                let rel = if *diff {
                    "proj/pkg/toy/generated/patched_toy.diff"
                } else {
                    "proj/pkg/toy/generated/patched_toy.py"
                };
                let text = self.read(rel).unwrap_or_default();
                match how {
                    0 => self.write(rel, &format!("{text}# hand edit\n")),
                    1 => self.write(rel, &text.replace('\n', "\r\n")),
                    2 => self.write(rel, &text[..text.len() / 2]),
                    _ => self.remove(rel),
                }
            }
            Op::Touch(k) => {
                let rel = [
                    "proj/pkg/toy/toy_patch_gen_config.py",
                    "proj/pkg/toy/shared.py",
                    "proj/upstream/toylib/modeling_toy.py",
                    "proj/pyproject.toml",
                    "proj/pkg/toy/generated/patched_toy.py",
                ][*k as usize];
                if let Ok(bytes) = std::fs::read(self.path(rel)) {
                    std::fs::write(self.path(rel), bytes).unwrap();
                }
            }
            Op::Delete(k) => self.remove(
                [
                    "proj/pkg/toy/shared.py",
                    "proj/upstream/toylib/modeling_toy.py",
                    "proj/pkg/toy/toy_npu_patch_gen_config.py",
                    "proj/upstream/transformers/__init__.py",
                ][*k as usize],
            ),
            Op::Restore => {
                for (rel, text) in initial_files(&self.real_ruff) {
                    if rel.starts_with("proj/") && !rel.ends_with("pyproject.toml") && !self.path(rel).exists() {
                        self.write(rel, &text);
                    }
                }
            }
            Op::Fix | Op::GenerateAll | Op::Concurrent => {}
        }
    }

    fn tool_patchgen_extra(&self) -> String {
        let text = self.read("proj/pyproject.toml").unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with("ruff_extra_ignore") || l.starts_with("ruff_isolated"))
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

fn same(step: &str, cached: &Run, fresh: &Run) -> Result<(), TestCaseError> {
    let notes = |s: &str| s.lines().filter(|l| !l.trim_start().starts_with("cache:")).collect::<Vec<_>>().join("\n");
    prop_assert_eq!(
        cached.code,
        fresh.code,
        "{}: exit codes\ncached:\n{}\n{}\nfresh:\n{}\n{}",
        step,
        cached.stdout,
        cached.stderr,
        fresh.stdout,
        fresh.stderr
    );
    prop_assert_eq!(&cached.stdout, &fresh.stdout, "{}: stdout", step);
    prop_assert_eq!(notes(&cached.stderr), notes(&fresh.stderr), "{}: stderr", step);
    Ok(())
}

#[derive(Default)]
struct Counts {
    hits: usize,
    misses: usize,
}

fn count(run: &Run, counts: &std::sync::Mutex<Counts>) {
    let mut c = counts.lock().unwrap();
    c.hits += run.stderr.matches("cache: hit").count();
    c.misses += run.stderr.matches("cache: miss").count();
}

fn case(real_ruff: &Path, ops: &[Op], counts: &std::sync::Mutex<Counts>) -> Result<(), TestCaseError> {
    let (a, b) = (Tree::new(real_ruff), Tree::new(real_ruff));
    let ga = a.run(&["--all", "--diff", "-v"]);
    let gb = b.run(&["--all", "--diff", "-v", "--no-cache"]);
    same("initial --all --diff", &ga, &gb)?;
    prop_assert_eq!(ga.code, 0, "{}\n{}", ga.stdout, ga.stderr);
    for (i, op) in ops.iter().enumerate() {
        a.apply(op);
        b.apply(op);
        let step = format!("step {i} ({op:?}) of {ops:?}");
        match op {
            Op::Fix | Op::GenerateAll => {
                let args: &[&str] =
                    if matches!(op, Op::Fix) { &["--check", "--fix", "-v"] } else { &["--all", "--diff", "-v"] };
                let fa = a.run(args);
                let fb = b.run(&[args, &["--no-cache"]].concat());
                count(&fa, counts);
                same(&format!("{step}: {args:?}"), &fa, &fb)?;
                prop_assert_eq!(a.snapshot(), b.snapshot(), "{}: trees after {:?}", step, args);
            }
            Op::Concurrent => {
                let one = a
                    .command(&["--check", "-v"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let two = a
                    .command(&["--check", "-v"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let fresh = b.run(&["--check", "-v", "--no-cache"]);
                for child in [one, two] {
                    let run = a.finish(child.wait_with_output().unwrap());
                    count(&run, counts);
                    same(&format!("{step}: concurrent check"), &run, &fresh)?;
                }
            }
            _ => {}
        }
        let ca = a.run(&["--check", "-v"]);
        let cb = b.run(&["--check", "-v", "--no-cache"]);
        count(&ca, counts);
        same(&step, &ca, &cb)?;
        // --no-cache neither reads nor writes the cache.
        prop_assert!(!b.path("proj/.patchgen_cache").exists());
    }
    Ok(())
}

#[test]
fn a_cached_check_gives_the_verdicts_of_an_uncached_one() {
    let real_ruff = common::TestEnv::get().ruff_dir.join("ruff").canonicalize().unwrap();
    let cases = std::env::var("PATCHGEN_CACHE_PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(8);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let counts = std::sync::Mutex::new(Counts::default());
    let result = runner.run(&proptest::collection::vec(op(), 1..8), |ops| case(&real_ruff, &ops, &counts));
    if let Err(e) = result {
        panic!("{e}");
    }
    let c = counts.lock().unwrap();
    eprintln!("cache hits {}, misses {} (config checks)", c.hits, c.misses);
    // The comparison means something only if both paths were taken.
    assert!(c.hits > 0 && c.misses > 0, "hits {} misses {}", c.hits, c.misses);
}
