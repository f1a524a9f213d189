//! Hostile inputs against the real binary (issue 39): each run under an
//! address-space limit and a timeout, and each must end by itself (no
//! signal, no exit 101 or 3), with a peak RSS under 2 GB, a located error
//! where one is due, and the project's own files byte-identical afterwards.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MiniProject, TestEnv, toy_config};

/// Address space each run may use: far below what the inputs would take
/// unbounded (24 GB, 5.8 GB), with room for the workers' 256 MiB stacks.
const ADDRESS_SPACE: u64 = 4 << 30;
/// Peak resident memory allowed.
const PEAK: u64 = 2 << 30;

struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    peak_bytes: u64,
}

impl Run {
    /// Ended by itself with `code`, within the memory budget.
    fn assert_code(&self, code: i32, what: &str) {
        assert_eq!(self.signal, None, "{what}: killed by signal {:?}\n{}", self.signal, self.stderr);
        assert_eq!(
            self.code,
            Some(code),
            "{what}: exit {:?}\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        assert!(self.peak_bytes < PEAK, "{what}: peak RSS {} bytes", self.peak_bytes);
        assert!(!self.stderr.contains("internal error"), "{what}: a panic\n{}", self.stderr);
    }
}

/// Run patchgen in `dir` under [`ADDRESS_SPACE`] and `timeout`, with
/// `stdin` fed in; `signal_when` (checked every 20 ms) sends a signal.
fn run_limited(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    signal_when: Option<(&dyn Fn() -> bool, i32)>,
) -> Run {
    let t = TestEnv::get();
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(&t.bin)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", t.ruff_dir.display()))
        .env("PYTHONPATH", format!("{}:{}", dir.display(), dir.join("upstream").display()))
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env("PATCHGEN_JOBS", "2")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Reaped by `wait4` below (for its peak RSS), not by `Child::wait`.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("run prlimit patchgen");
    let pid = child.id() as i32;
    if let Some(bytes) = stdin {
        let mut input = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = input.write_all(&bytes);
        });
    }
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let mut signalled = false;
    let (status, peak_bytes) = loop {
        if let Some(r) = wait4(pid) {
            break r;
        }
        if let Some((when, sig)) = &signal_when
            && !signalled
            && when()
        {
            send_signal(pid, *sig);
            signalled = true;
        }
        if start.elapsed() > timeout {
            send_signal(pid, 9);
            let _ = wait4_blocking(pid);
            panic!("patchgen {args:?} did not end within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    let (code, signal) = decode_status(status);
    Run { code, signal, stdout, stderr, peak_bytes }
}

/// `wait4` without blocking: the status and peak RSS (bytes) once `pid` ended.
#[allow(unsafe_code)]
fn wait4(pid: i32) -> Option<(i32, u64)> {
    let mut status = 0;
    // SAFETY: `rusage` is plain data, zeroed then filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child; the pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    (r == pid).then_some((status, usage.ru_maxrss as u64 * 1024))
}

#[allow(unsafe_code)]
fn wait4_blocking(pid: i32) -> i32 {
    let mut status = 0;
    // SAFETY: as in `wait4`.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    status
}

#[allow(unsafe_code)]
fn send_signal(pid: i32, sig: i32) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, sig) };
}

fn decode_status(status: i32) -> (Option<i32>, Option<i32>) {
    if libc::WIFEXITED(status) { (Some(libc::WEXITSTATUS(status)), None) } else { (None, Some(libc::WTERMSIG(status))) }
}

/// Every file under `root` (symlinks not followed) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let bytes = if e.metadata().unwrap().len() > 1 << 20 {
                    b"(large)".to_vec()
                } else {
                    std::fs::read(&p).unwrap()
                };
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), bytes);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), b"(special)".to_vec());
            }
        }
    }
    out
}

const MINUTE: Duration = Duration::from_secs(60);

fn project_with(config: &str) -> MiniProject {
    MiniProject::new(&[("pkg/toy/__init__.py", ""), ("pkg/toy/toy_patch_gen_config.py", config)])
}

// ---- 1. no abort: budgets in the evaluator ----

#[test]
fn evaluator_budgets_count_before_building() {
    let stacked = format!("{}def f():\n    return 1\n", "@config.add_helper\n".repeat(20_000));
    let cases = [
        ("replace", "x = (\"a\" * 9000000).replace(\"a\", \"a\" * 200)\n".to_string(), "too large"),
        ("join", "x = \"-\".join([\"a\" * 9000000, \"a\" * 9000000])\n".to_string(), "too large"),
        ("f-string", "s = \"a\" * 9000000\nx = f\"{s}{s}\"\n".to_string(), "too large"),
        ("stacked decorators", stacked, "add up to over"),
    ];
    for (what, body, says) in cases {
        let p = project_with(&toy_config(&body));
        let before = snapshot(p.path());
        let r = run_limited(p.path(), &["--check", "--no-cache"], &[], None, MINUTE, None);
        r.assert_code(1, what);
        assert!(r.stdout.contains("toy_patch_gen_config.py:") && r.stdout.contains(says), "{what}: {}", r.stdout);
        assert_eq!(snapshot(p.path()), before, "{what}: the project changed");
    }
}

// ---- 1. no abort: deep nesting in the server's checks ----

fn frame(body: &serde_json::Value) -> Vec<u8> {
    let b = body.to_string();
    format!("Content-Length: {}\r\n\r\n{b}", b.len()).into_bytes()
}

#[test]
fn server_survives_deep_nesting_and_bad_framing() {
    let p = project_with(&toy_config(""));
    let uri = format!("file://{}/pkg/toy/toy_patch_gen_config.py", p.path().display());
    let mut input =
        frame(&serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}));
    input.extend(frame(&serde_json::json!({"jsonrpc":"2.0","method":"initialized","params":{}})));
    let terms = vec!["1"; 50_000].join("+");
    let nested = [
        format!("x = {terms}\n"),
        format!("x = {}1\n", "-".repeat(100_000)),
        format!("x = {}True\n", "not ".repeat(100_000)),
        format!("x = y{}\n", ".a".repeat(100_000)),
        format!("x = y{}\n", "[0:]".repeat(100_000)),
    ];
    for (k, text) in nested.iter().enumerate() {
        input.extend(frame(&serde_json::json!({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{
            "textDocument":{"uri":uri,"languageId":"python","version":k,"text":toy_config(text)}}})));
        input.extend(frame(&serde_json::json!({"jsonrpc":"2.0","method":"textDocument/didClose","params":{
            "textDocument":{"uri":uri}}})));
    }
    // A wrong Content-Length, then a request that must still be answered.
    input.extend(b"Content-Length: 5\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"shutdown\"}");
    input.extend(b"Content-Length: x\r\n\r\n{}");
    input.extend(frame(&serde_json::json!({"jsonrpc":"2.0","id":2,"method":"shutdown"})));
    input.extend(frame(&serde_json::json!({"jsonrpc":"2.0","method":"exit"})));
    let before = snapshot(p.path());
    let r = run_limited(p.path(), &["server"], &[], Some(input), MINUTE, None);
    r.assert_code(0, "server");
    assert!(
        r.stdout.contains("\"id\":2,\"result\":null") || r.stdout.contains("\"result\":null,\"id\":2"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("-32700"), "a parse error for the bad frames: {}", r.stdout);
    assert_eq!(snapshot(p.path()), before);
}

// ---- 1. checked integers from config.json; a failing --format json still writes JSON ----

fn write_safetensors(path: &Path, tensors: &[(&str, &[u64])]) {
    let mut header = serde_json::Map::new();
    let mut at = 0u64;
    for (name, shape) in tensors {
        let len = shape.iter().product::<u64>() * 2;
        header
            .insert(name.to_string(), serde_json::json!({"dtype":"BF16","shape":shape,"data_offsets":[at, at + len]}));
        at += len;
    }
    let mut json = serde_json::Value::Object(header).to_string().into_bytes();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    f.write_all(&json).unwrap();
    // Sparse: the data reads as zeros without taking disk space.
    f.set_len(8 + json.len() as u64 + at).unwrap();
}

fn per_expert_checkpoint(dir: &Path, experts: u64, i: u64, h: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let names: Vec<(String, Vec<u64>)> = (0..experts)
        .flat_map(|j| {
            [("gate_proj", vec![i, h]), ("up_proj", vec![i, h]), ("down_proj", vec![h, i])]
                .map(|(p, s)| (format!("model.layers.0.mlp.experts.{j}.{p}.weight"), s))
        })
        .collect();
    let refs: Vec<(&str, &[u64])> = names.iter().map(|(n, s)| (n.as_str(), s.as_slice())).collect();
    write_safetensors(&dir.join("model.safetensors"), &refs);
}

#[test]
fn moe_refuses_absurd_config_integers_with_the_key() {
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("ck");
    per_expert_checkpoint(&ck, 2, 4, 8);
    for (key, extra) in [("num_hidden_layers", r#""num_experts": 2"#), ("num_experts", r#""num_hidden_layers": 1"#)] {
        let config = format!(
            r#"{{"model_type":"qwen3_moe","hidden_size":8,"moe_intermediate_size":4,{extra},"{key}":4611686018427387904}}"#
        );
        std::fs::write(ck.join("config.json"), config).unwrap();
        let r = run_limited(d.path(), &["moe", "inspect", "ck", "--format", "json"], &[], None, MINUTE, None);
        r.assert_code(1, key);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("a JSON document");
        assert!(doc.to_string().contains(&format!("`{key}` is 4611686018427387904")), "{key}: {doc}");
        assert!(doc.to_string().contains("config.json"), "{doc}");
    }
}

// ---- 2. bounded input ----

#[test]
fn large_and_nul_configs_are_refused_before_reading() {
    let p = project_with(&toy_config(""));
    let cfg = p.path().join("pkg/toy/toy_patch_gen_config.py");
    std::fs::File::create(&cfg).unwrap().set_len(1 << 30).unwrap();
    for args in [&["list"][..], &["--check", "--no-cache"], &["lint", "--no-cache"]] {
        let r = run_limited(p.path(), args, &[], None, MINUTE, None);
        assert_eq!(r.signal, None, "{args:?}");
        assert!(matches!(r.code, Some(1 | 2)), "{args:?}: {:?}\n{}{}", r.code, r.stdout, r.stderr);
        assert!(r.peak_bytes < PEAK, "{args:?}: peak {}", r.peak_bytes);
        let all = format!("{}{}", r.stdout, r.stderr);
        if args[0] != "list" {
            assert!(all.contains("toy_patch_gen_config.py") && all.contains("16777216-byte limit"), "{args:?}: {all}");
        }
    }
    // Raised by the setting: the same file is then read (and is NULs: refused as Python refuses them).
    std::fs::write(&cfg, vec![0u8; 10 << 20]).unwrap();
    let r = run_limited(p.path(), &["--check", "--no-cache"], &[], None, MINUTE, None);
    r.assert_code(1, "NUL bytes");
    assert!(r.stdout.contains("NUL byte"), "{}", r.stdout);
    let r =
        run_limited(p.path(), &["--check", "--no-cache"], &[("PATCHGEN_MAX_FILE_SIZE", "1000")], None, MINUTE, None);
    r.assert_code(1, "setting");
    assert!(r.stdout.contains("1000-byte limit"), "{}", r.stdout);
}

#[test]
fn cache_entries_that_are_fifos_or_huge_are_not_read() {
    let p = project_with(&toy_config(""));
    let r = run_limited(p.path(), &["generate", "--all", "--diff"], &[], None, MINUTE, None);
    r.assert_code(0, "generate");
    let r = run_limited(p.path(), &["--check"], &[], None, MINUTE, None);
    r.assert_code(0, "first check");
    let entries = p.path().join(".patchgen_cache/entries");
    let names: Vec<PathBuf> = std::fs::read_dir(&entries).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!names.is_empty());
    for (k, e) in names.iter().enumerate() {
        std::fs::remove_file(e).unwrap();
        if k % 2 == 0 {
            assert!(Command::new("mkfifo").arg(e).status().unwrap().success());
        } else {
            std::fs::File::create(e).unwrap().set_len(8 << 30).unwrap();
        }
    }
    let r = run_limited(p.path(), &["--check"], &[], None, Duration::from_secs(30), None);
    r.assert_code(0, "check over a FIFO entry");
}

// ---- 3. stay inside what patchgen owns ----

#[test]
fn cache_dir_dot_with_a_foreign_tag_neither_litters_nor_deletes() {
    let p = project_with(&toy_config(""));
    let r = run_limited(p.path(), &["generate", "--all", "--diff"], &[], None, MINUTE, None);
    r.assert_code(0, "generate");
    p.write(".gitignore", "/build\n");
    p.write("CACHEDIR.TAG", "");
    let before = snapshot(p.path());
    let env = [("PATCHGEN_CACHE_DIR", ".")];
    let r = run_limited(p.path(), &["--check"], &env, None, MINUTE, None);
    r.assert_code(0, "check");
    assert_eq!(snapshot(p.path()), before, "--check wrote into the project root");
    let r = run_limited(p.path(), &["clean"], &env, None, MINUTE, None);
    assert_eq!(r.signal, None);
    assert_eq!(snapshot(p.path()), before, "clean removed project files");
}

#[test]
fn clean_removes_only_its_own_files() {
    let p = project_with(&toy_config(""));
    let r = run_limited(p.path(), &["generate", "--all", "--diff"], &[], None, MINUTE, None);
    r.assert_code(0, "generate");
    let r = run_limited(p.path(), &["--check"], &[], None, MINUTE, None);
    r.assert_code(0, "check");
    let cache = p.path().join(".patchgen_cache");
    std::fs::write(cache.join("entries/notes.entry"), "mine").unwrap();
    std::fs::write(cache.join("entries/check-0123456789abcdef0123456789abcdef.entry"), "not an entry").unwrap();
    std::fs::write(cache.join("keep.txt"), "mine").unwrap();
    let r = run_limited(p.path(), &["clean"], &[], None, MINUTE, None);
    r.assert_code(0, "clean");
    let left: Vec<String> = snapshot(&cache).keys().map(|k| k.display().to_string()).collect();
    assert_eq!(
        left,
        ["entries/check-0123456789abcdef0123456789abcdef.entry", "entries/notes.entry", "keep.txt"],
        "clean removed a file it did not write, or left one it did"
    );
}

#[test]
fn writes_outside_the_project_are_refused() {
    let outer = tempfile::tempdir().unwrap();
    let other = outer.path().join("other");
    std::fs::create_dir_all(other.join("toy")).unwrap();
    std::fs::write(other.join("toy/toy_patch_gen_config.py"), toy_config("")).unwrap();
    let p = project_with(&toy_config(""));
    let pyproject = p.read("pyproject.toml");
    p.write(
        "pyproject.toml",
        &pyproject.replace("search_root = \"pkg\"", &format!("search_root = \"{}\"", other.display())),
    );
    let before = snapshot(outer.path());
    let r = run_limited(p.path(), &["--check", "--fix"], &[], None, MINUTE, None);
    r.assert_code(2, "search_root outside");
    assert!(
        r.stderr.contains("outside the project") || r.stdout.contains("outside the project"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(snapshot(outer.path()), before);

    // A generated/ directory that is a symlink to elsewhere.
    p.write("pyproject.toml", &pyproject);
    std::os::unix::fs::symlink(&other, p.path().join("pkg/toy/generated")).unwrap();
    let r = run_limited(p.path(), &["generate", "--all", "--diff"], &[], None, MINUTE, None);
    r.assert_code(1, "generated symlink");
    assert!(format!("{}{}", r.stdout, r.stderr).contains("outside the project"), "{}{}", r.stdout, r.stderr);
    assert_eq!(snapshot(outer.path()), before);
}

#[test]
fn moe_destinations_and_addresses_are_checked_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    per_expert_checkpoint(&d.path().join("ck"), 2, 4, 8);
    let before = snapshot(d.path());
    let r = run_limited(d.path(), &["moe", "convert", "ck", "ck/sub"], &[], None, MINUTE, None);
    r.assert_code(2, "DST inside SRC (a usage error)");
    assert!(r.stderr.contains("DST is SRC or inside it"), "{}", r.stderr);
    for (args, says) in [
        (&["moe", "inspect", "hf://../x"][..], "`..`"),
        (&["moe", "inspect", "hf://org/repo@.."], "`..`"),
        (&["moe", "inspect", "--offline", "hf://org/repo/../../../.."], "`..`"),
        (&["moe", "inspect", "s3://b ucket/x", "--format", "json"], "not a valid bucket name"),
        (&["moe", "convert", "ck", "gs://UPPER/x"], "not a valid bucket name"),
    ] {
        let r = run_limited(d.path(), args, &[], None, MINUTE, None);
        r.assert_code(2, args[2]);
        assert!(format!("{}{}", r.stdout, r.stderr).contains(says), "{args:?}: {}{}", r.stdout, r.stderr);
        if args.contains(&"json") {
            let _: serde_json::Value = serde_json::from_str(&r.stdout).expect("a JSON document");
        }
    }
    assert_eq!(snapshot(d.path()), before);
}

// ---- 5. interrupts clean up ----

#[test]
fn an_interrupted_conversion_leaves_nothing_behind() {
    let d = tempfile::tempdir().unwrap();
    // 1.5 GB of sparse expert weights: long enough to be interrupted.
    per_expert_checkpoint(&d.path().join("ck"), 8, 8192, 4096);
    let before = snapshot(d.path());
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let root = d.path().to_path_buf();
        let started = move || {
            std::fs::read_dir(&root).unwrap().flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with(".patchgen-moe-")
                    && std::fs::read_dir(e.path()).is_ok_and(|mut l| l.next().is_some())
            })
        };
        let r = run_limited(d.path(), &["moe", "convert", "ck", "out"], &[], None, MINUTE, Some((&started, sig)));
        assert_eq!(r.signal, None, "signal {sig}: the process died by it\n{}", r.stderr);
        assert_eq!(r.code, Some(code), "signal {sig}\n{}", r.stderr);
        assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
        assert_eq!(snapshot(d.path()), before, "signal {sig}: leftovers");
    }
}

// ---- 6. messages ----

#[test]
fn explain_refuses_lines_below_one() {
    let p = project_with(&toy_config(""));
    for spec in ["F.py:-1", "F.py:0"] {
        let r = run_limited(p.path(), &["explain", spec], &[], None, MINUTE, None);
        r.assert_code(2, spec);
        assert!(r.stderr.contains("is not FILE:LINE") && r.stderr.contains("1-based"), "{}", r.stderr);
    }
}

// ---- every command with hostile arguments ----

/// Each command with arguments an attacker would try: a 100 KB word, a
/// non-UTF-8 byte, `..`, `/dev/zero`, a FIFO, absurd numbers. None may
/// panic, hang, take the memory, or write anything outside the cache.
#[test]
fn every_command_survives_hostile_arguments() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let outer = tempfile::tempdir().unwrap();
    let p = project_with(&toy_config(""));
    let fifo = outer.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap().to_string();
    let long = "x".repeat(100_000);
    let bad_utf8 = OsString::from_vec(vec![b'p', 0xff, 0xfe, b'.', b'p', b'y']).into_string().unwrap_err();
    let cases: Vec<Vec<OsString>> = [
        vec!["generate", long.as_str()],
        vec!["generate", "../../etc/passwd"],
        vec!["generate", "pkg.toy.toy_patch_gen_config", "-o", "/dev/null", "--diff"],
        vec!["check", "--project", "/dev/zero"],
        vec!["check", "--project", fifo.as_str()],
        vec!["list", "--project", "../../../../.."],
        vec!["clean", "--project", long.as_str()],
        vec!["survey", "--from", long.as_str(), "--to", "..", "--no-download"],
        vec!["lint", fifo.as_str()],
        vec!["lint", "--select", long.as_str()],
        vec!["explain", "F.py:99999999999999999999999999"],
        vec!["explain", long.as_str()],
        vec!["rule", long.as_str()],
        vec!["rule", "../../x"],
        vec!["reference", "../../x", "--old", "..", "--no-download"],
        vec!["new", "../../evil", "--dry-run"],
        vec!["new", ".."],
        vec!["moe", "inspect", "/dev/zero"],
        vec!["moe", "inspect", fifo.as_str()],
        vec!["moe", "inspect", &format!("hf://{long}/x")],
        vec!["moe", "convert", "/dev/zero", "out"],
        vec!["moe", "convert", ".", "."],
        vec!["moe", "convert", "ck", "out", "--shard-size", "99999999999999999999TB"],
        vec!["completions", long.as_str()],
        vec!["--check", "--config-name", long.as_str()],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(OsString::from).collect())
    .chain([
        vec![OsString::from("generate"), bad_utf8.clone()],
        vec![OsString::from("lint"), bad_utf8.clone()],
        vec![OsString::from("moe"), OsString::from("inspect"), bad_utf8.clone()],
        vec![OsString::from("explain"), bad_utf8],
    ])
    .collect();
    let before = snapshot(p.path());
    for args in &cases {
        let shown: Vec<String> = args.iter().map(|a| a.to_string_lossy().chars().take(40).collect()).collect();
        let strs: Vec<&str> = args.iter().map(|a| a.to_str().unwrap_or("")).collect();
        // Non-UTF-8 arguments go through `--` into an env-free sh that passes them as bytes.
        let r = if args.iter().all(|a| a.to_str().is_some()) {
            run_limited(p.path(), &strs, &[], None, Duration::from_secs(30), None)
        } else {
            let bytes = args.last().unwrap().clone();
            std::fs::write(outer.path().join("arg"), bytes.into_vec()).unwrap();
            let mut head: Vec<&str> = strs[..strs.len() - 1].to_vec();
            let script = format!("exec \"$0\" \"$@\" \"$(cat {})\"", outer.path().join("arg").display());
            let t = TestEnv::get();
            let bin = t.bin.to_str().unwrap().to_string();
            let mut sh = vec!["-c", script.as_str(), bin.as_str()];
            sh.append(&mut head);
            run_sh(p.path(), &sh)
        };
        assert_eq!(r.signal, None, "{shown:?}: killed by a signal\n{}", r.stderr);
        assert!(!matches!(r.code, Some(101 | 3)), "{shown:?}: exit {:?}\n{}", r.code, r.stderr);
        assert!(r.peak_bytes < PEAK, "{shown:?}: peak {}", r.peak_bytes);
        assert!(!r.stderr.contains("internal error"), "{shown:?}: {}", r.stderr);
        let mut after = snapshot(p.path());
        after.retain(|k, _| !k.starts_with(".patchgen_cache"));
        assert_eq!(after, before, "{shown:?}: the project changed");
    }
}

/// `sh` with the arguments, under the same limits (for non-UTF-8 arguments).
fn run_sh(dir: &Path, args: &[&str]) -> Run {
    let start = Instant::now();
    let out = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE}"))
        .args(["--", "timeout", "30", "sh"])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    let (code, signal) = match out.status.code() {
        Some(124) => (None, Some(9)),
        Some(c) if c > 128 => (None, Some(c - 128)),
        c => (c, None),
    };
    Run {
        code,
        signal,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        peak_bytes: 0,
    }
}
