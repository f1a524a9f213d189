//! Shared test support: the environment the integration tests need (ruff,
//! the transformers wheel), running the binary, file-tree helpers.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct TestEnv {
    pub bin: PathBuf,
    /// A directory holding nothing but a `ruff` link, for PATH.
    pub ruff_dir: PathBuf,
    transformers: Option<PathBuf>,
    _keep: tempfile::TempDir,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

impl TestEnv {
    pub fn get() -> &'static TestEnv {
        static ENV: OnceLock<TestEnv> = OnceLock::new();
        ENV.get_or_init(|| {
            let ruff =
                std::env::var_os("PATCHGEN_TEST_RUFF").map(PathBuf::from).or_else(|| find_on_path("ruff")).expect(
                    "ruff is needed: set PATCHGEN_TEST_RUFF or put ruff 0.13.2 on PATH (scripts/test-env.sh does both)",
                );
            let ruff = ruff.canonicalize().expect("ruff path");
            let keep = tempfile::tempdir().unwrap();
            let ruff_dir = keep.path().join("bin");
            std::fs::create_dir_all(&ruff_dir).unwrap();
            std::os::unix::fs::symlink(&ruff, ruff_dir.join("ruff")).unwrap();
            TestEnv {
                bin: PathBuf::from(env!("CARGO_BIN_EXE_patchgen")),
                ruff_dir,
                transformers: std::env::var_os("PATCHGEN_TEST_TRANSFORMERS").map(PathBuf::from),
                _keep: keep,
            }
        })
    }

    /// The transformers 5.9.0 wheel (file or unpacked directory).
    pub fn transformers(&self) -> PathBuf {
        self.transformers.clone().expect(
            "PATCHGEN_TEST_TRANSFORMERS must point at the transformers 5.9.0 wheel (scripts/test-env.sh fetches it)",
        )
    }

    /// Run patchgen in `dir` with only ruff on PATH (no Python anywhere).
    pub fn patchgen(&self, dir: &Path, pythonpath: &str, args: &[&str]) -> Output {
        self.patchgen_env(dir, pythonpath, args, &[])
    }

    pub fn patchgen_env(&self, dir: &Path, pythonpath: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", &self.ruff_dir)
            .env("PYTHONPATH", pythonpath)
            .env("HOME", dir)
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run patchgen");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

pub fn copy_tree(from: &Path, to: &Path) {
    for file in walk(from) {
        let rel = file.strip_prefix(from).unwrap();
        if rel.components().any(|c| c.as_os_str() == "__pycache__") {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&file, &dest).unwrap();
    }
}

/// A file of the transformers distribution (wheel file or directory).
pub fn read_upstream(transformers: &Path, rel: &str) -> String {
    if transformers.is_dir() {
        return std::fs::read_to_string(transformers.join(rel)).unwrap();
    }
    let mut zip = zip::ZipArchive::new(std::fs::File::open(transformers).unwrap()).unwrap();
    let mut member = zip.by_name(rel).unwrap();
    let mut s = String::new();
    member.read_to_string(&mut s).unwrap();
    s
}

/// Apply a unified diff (as patchgen writes it: context and `-` lines may
/// have lost trailing whitespace) to `original`.
pub fn apply_unified_diff(original: &str, diff: &str) -> String {
    let old: Vec<&str> = original.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut pos = 0usize;
    let mut lines = diff.lines().skip(2).peekable();
    while let Some(header) = lines.next() {
        let header = header.strip_prefix("@@ -").expect("hunk header");
        let range = header.split(' ').next().unwrap();
        let mut parts = range.split(',');
        let start: usize = parts.next().unwrap().parse().unwrap();
        let len: usize = parts.next().map(|l| l.parse().unwrap()).unwrap_or(1);
        let start0 = if len == 0 { start } else { start - 1 };
        for l in &old[pos..start0] {
            out.push_str(l);
        }
        pos = start0;
        while let Some(l) = lines.peek() {
            if l.starts_with("@@") {
                break;
            }
            let l = lines.next().unwrap();
            match l.chars().next() {
                Some('+') => {
                    out.push_str(&l[1..]);
                    out.push('\n');
                }
                Some('-') => pos += 1,
                _ => {
                    out.push_str(old[pos]);
                    pos += 1;
                }
            }
        }
    }
    for l in &old[pos..] {
        out.push_str(l);
    }
    out
}

/// Where two byte strings first differ, for failure messages.
pub fn first_difference(expected: &[u8], got: &[u8]) -> String {
    let e = String::from_utf8_lossy(expected);
    let g = String::from_utf8_lossy(got);
    for (i, (a, b)) in e.lines().zip(g.lines()).enumerate() {
        if a != b {
            return format!("line {}:\n  expected: {a:?}\n  got:      {b:?}", i + 1);
        }
    }
    format!("lengths differ: expected {} lines, got {}", e.lines().count(), g.lines().count())
}

/// A small project in a temporary directory.
pub struct MiniProject {
    pub dir: tempfile::TempDir,
}

pub const MINI_PYPROJECT: &str = "[tool.patchgen]\nsearch_root = \"pkg\"\npackage_prefix = \"pkg\"\n\n[tool.ruff]\nline-length = 119\n\n[tool.ruff.lint]\nselect = [\"E\", \"F\", \"I\", \"W\"]\nignore = [\"E501\"]\n";

pub const MINI_UPSTREAM: &str = "\"\"\"Toy upstream.\"\"\"\n\nimport math\n\n\nclass Norm:\n    def __init__(self, eps):\n        self.eps = eps\n\n    def forward(self, x):\n        return x * math.sqrt(self.eps)\n\n\nclass Empty:\n    pass\n\n\ndef helper(x):\n    return x + 1\n";

impl MiniProject {
    /// A project with `pyproject.toml`, `upstream/toylib/modeling_toy.py`
    /// and the given extra files.
    pub fn new(files: &[(&str, &str)]) -> MiniProject {
        let dir = tempfile::tempdir().unwrap();
        let mut all: Vec<(&str, &str)> = vec![
            ("pyproject.toml", MINI_PYPROJECT),
            ("upstream/toylib/__init__.py", ""),
            ("upstream/toylib/modeling_toy.py", MINI_UPSTREAM),
            ("pkg/__init__.py", ""),
        ];
        all.extend_from_slice(files);
        for (path, text) in all {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        MiniProject { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn pythonpath(&self) -> String {
        format!("{}:{}", self.path().display(), self.path().join("upstream").display())
    }

    pub fn run(&self, args: &[&str]) -> Output {
        TestEnv::get().patchgen(self.path(), &self.pythonpath(), args)
    }

    pub fn write(&self, path: &str, text: &str) {
        let p = self.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path)).unwrap()
    }
}

/// A config for the mini project's toy upstream.
pub fn toy_config(body: &str) -> String {
    format!(
        "from patchgen import PatchConfig\n\nconfig = PatchConfig(\n    source_module=\"toylib.modeling_toy\",\n    target_file=\"patched_toy.py\",\n    transformers_version=\"0.0.0\",\n)\n\n{body}"
    )
}

/// The wheel of a version, or None (skipped) when the environment lacks it.
pub fn wheel(version: &str) -> Option<PathBuf> {
    let var = if version == "5.9.0" { "PATCHGEN_TEST_TRANSFORMERS" } else { "PATCHGEN_TEST_TRANSFORMERS_5_16" };
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{var} must point at the transformers {version} wheel")
        }
        _ => {
            eprintln!("skipping: {var} is not set (run through scripts/test.sh)");
            None
        }
    }
}

/// Write `files` (paths relative to `root`, directories made as needed).
pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}
