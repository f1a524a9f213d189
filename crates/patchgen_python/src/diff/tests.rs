//! Unit tests (expected values taken from CPython 3.11's difflib) and a
//! differential property test against the live `python3`.

use super::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};

fn m(a: usize, b: usize, size: usize) -> Match {
    Match { a, b, size }
}

fn op(tag: Tag, i1: usize, i2: usize, j1: usize, j2: usize) -> Opcode {
    Opcode { tag, i1, i2, j1, j2 }
}

fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

// ---------------------------------------------------------------- unit tests

#[test]
fn matching_blocks_docstring_example() {
    let sm = SequenceMatcher::new(&chars("abxcd"), &chars("abcd"));
    assert_eq!(sm.get_matching_blocks(), vec![m(0, 0, 2), m(3, 2, 2), m(5, 4, 0)]);
}

#[test]
fn find_longest_match_docstring_example() {
    let sm = SequenceMatcher::new(&chars(" abcd"), &chars("abcd abcd"));
    assert_eq!(sm.find_longest_match(0, 5, 0, 9), m(0, 4, 5));
    // Ties go to the earliest match in `a`, then in `b`.
    let sm = SequenceMatcher::new(&chars("ab"), &chars("abab"));
    assert_eq!(sm.find_longest_match(0, 2, 0, 4), m(0, 0, 2));
    assert_eq!(sm.find_longest_match(0, 2, 1, 4), m(0, 2, 2));
    // No match at all: (alo, blo, 0).
    let sm = SequenceMatcher::new(&chars("xyz"), &chars("abc"));
    assert_eq!(sm.find_longest_match(1, 3, 2, 3), m(1, 2, 0));
}

#[test]
fn opcodes_docstring_example() {
    let sm = SequenceMatcher::new(&chars("qabxcd"), &chars("abycdf"));
    assert_eq!(
        sm.get_opcodes(),
        vec![
            op(Tag::Delete, 0, 1, 0, 0),
            op(Tag::Equal, 1, 3, 0, 2),
            op(Tag::Replace, 3, 4, 2, 3),
            op(Tag::Equal, 4, 6, 3, 5),
            op(Tag::Insert, 6, 6, 5, 6),
        ]
    );
    assert_eq!(Tag::Replace.as_str(), "replace");
}

#[test]
fn empty_sequences() {
    let e: [&str; 0] = [];
    let sm = SequenceMatcher::new(&e, &e);
    assert_eq!(sm.get_matching_blocks(), vec![m(0, 0, 0)]);
    assert_eq!(sm.get_opcodes(), vec![]);
    assert_eq!(sm.get_grouped_opcodes(3), Vec::<Vec<Opcode>>::new());
    assert_eq!(sm.get_grouped_opcodes(0), Vec::<Vec<Opcode>>::new());
}

#[test]
fn autojunk_drops_popular_lines_from_b2j() {
    // Expected values from CPython: with autojunk the run of "p" lines
    // (5 > 206 // 100 + 1 occurrences in b) cannot anchor a match.
    let mut a: Vec<String> = vec!["x\n".into(); 3];
    a.extend(std::iter::repeat_n("p\n".to_string(), 5));
    a.push("y\n".into());
    let mut b: Vec<String> = (0..100).map(|i| format!("l{i}\n")).collect();
    b.extend(std::iter::repeat_n("p\n".to_string(), 5));
    b.extend((0..100).map(|i| format!("m{i}\n")));
    b.push("y\n".into());

    let sm = SequenceMatcher::new(&a, &b);
    assert_eq!(sm.popular_count(), 1);
    assert_eq!(sm.get_matching_blocks(), vec![m(8, 205, 1), m(9, 206, 0)]);

    let sm = SequenceMatcher::with_autojunk(&a, &b, false);
    assert_eq!(sm.popular_count(), 0);
    assert_eq!(sm.get_matching_blocks(), vec![m(3, 100, 5), m(8, 205, 1), m(9, 206, 0)]);

    // Below 200 elements in b the heuristic is off.
    let sm = SequenceMatcher::new(&a, &b[..199]);
    assert_eq!(sm.popular_count(), 0);
}

#[test]
fn popular_elements_still_extend_matches() {
    // 300 copies of one line: all popular, b2j is empty, yet the match is
    // found by extending the empty match at (alo, blo) over equal elements.
    let b = vec!["z\n"; 300];
    let a = vec!["z\n"; 250];
    let sm = SequenceMatcher::new(&a, &b);
    assert_eq!(sm.popular_count(), 1);
    assert_eq!(sm.get_matching_blocks(), vec![m(0, 0, 250), m(250, 300, 0)]);
}

const A: &[&str] = &[
    "import os\n",
    "import sys\n",
    "\n",
    "def f(x):\n",
    "    return x + 1\n",
    "\n",
    "def g(y):\n",
    "    return y * 2\n",
    "\n",
    "def h():\n",
    "    pass\n",
    "\n",
    "X = 1\n",
    "Y = 2\n",
];
const B: &[&str] = &[
    "import os\n",
    "import re\n",
    "import sys\n",
    "\n",
    "def f(x):\n",
    "    return x + 1\n",
    "\n",
    "def g(y):\n",
    "    return y * 3\n",
    "\n",
    "def h():\n",
    "    pass\n",
    "\n",
    "X = 1\n",
    "Y = 2",
];

#[test]
fn unified_diff_n0() {
    assert_eq!(
        unified_diff(A, B, "a/m.py", "b/m.py", 0),
        "--- a/m.py\n+++ b/m.py\n@@ -1,0 +2 @@\n+import re\n@@ -8 +9 @@\n-    return y * 2\n\
         +    return y * 3\n@@ -14 +15 @@\n-Y = 2\n+Y = 2"
    );
}

#[test]
fn unified_diff_n1() {
    assert_eq!(
        unified_diff(A, B, "a/m.py", "b/m.py", 1),
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n import os\n+import re\n import sys\n\
         @@ -7,3 +8,3 @@\n def g(y):\n-    return y * 2\n+    return y * 3\n \n\
         @@ -13,2 +14,2 @@\n X = 1\n-Y = 2\n+Y = 2"
    );
}

#[test]
fn unified_diff_n3() {
    assert_eq!(
        unified_diff(A, B, "a/m.py", "b/m.py", 3),
        "--- a/m.py\n+++ b/m.py\n@@ -1,14 +1,15 @@\n import os\n+import re\n import sys\n \n\
         \x20def f(x):\n     return x + 1\n \n def g(y):\n-    return y * 2\n+    return y * 3\n \n\
         \x20def h():\n     pass\n \n X = 1\n-Y = 2\n+Y = 2"
    );
}

#[test]
fn unified_diff_headers_and_edge_ranges() {
    assert_eq!(unified_diff(&[], &["x\n", "y"], "", "", 3), "--- \n+++ \n@@ -0,0 +1,2 @@\n+x\n+y");
    assert_eq!(
        unified_diff(&["x\n", "y"], &[], "old name", "new name", 3),
        "--- old name\n+++ new name\n@@ -1,2 +0,0 @@\n-x\n-y"
    );
    assert_eq!(unified_diff(&["x\n"], &["x"], "f", "f", 3), "--- f\n+++ f\n@@ -1 +1 @@\n-x\n+x");
}

#[test]
fn unified_diff_identical_or_empty_is_empty() {
    assert_eq!(unified_diff(&[], &[], "a", "b", 3), "");
    assert_eq!(unified_diff(A, A, "a", "b", 3), "");
    assert_eq!(unified_diff(A, A, "a", "b", 0), "");
}

// ------------------------------------------------- differential tests vs CPython

#[derive(Debug, Clone)]
struct Case {
    a: Vec<String>,
    b: Vec<String>,
    n: usize,
    fromfile: String,
    tofile: String,
    /// Used for the direct `get_opcodes` comparison; `unified_diff` always autojunks.
    autojunk: bool,
}

impl Case {
    fn to_json(&self) -> Value {
        json!({
            "a": self.a, "b": self.b, "n": self.n,
            "fromfile": self.fromfile, "tofile": self.tofile, "autojunk": self.autojunk,
        })
    }
}

/// Runs every case through CPython's difflib in one `python3` process.
const PY_REFERENCE: &str = r#"
import difflib, json, sys
out = []
for c in json.loads(sys.stdin.buffer.read().decode("utf-8")):
    a, b = c["a"], c["b"]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=c["autojunk"])
    out.append({
        "diff": "".join(difflib.unified_diff(a, b, c["fromfile"], c["tofile"], n=c["n"])),
        "blocks": [list(m) for m in sm.get_matching_blocks()],
        "opcodes": [list(o) for o in sm.get_opcodes()],
    })
sys.stdout.write(json.dumps(out, ensure_ascii=True))
"#;

fn python_reference(cases: &[Case]) -> Vec<Value> {
    let input = Value::Array(cases.iter().map(Case::to_json).collect()).to_string();
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PY_REFERENCE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 must be on PATH for the difflib differential test");
    // Write from another thread so a large input cannot deadlock against stdout.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "python3 failed: {}", String::from_utf8_lossy(&output.stderr));
    match serde_json::from_slice(&output.stdout).unwrap() {
        Value::Array(results) => {
            assert_eq!(results.len(), cases.len());
            results
        }
        other => panic!("unexpected python3 output: {other}"),
    }
}

/// Compares our port with CPython on every case; the error names the first
/// mismatching case (as JSON, ready to paste into python3).
fn check_against_python(cases: &[Case]) -> Result<(), TestCaseError> {
    let expected = python_reference(cases);
    for (case, exp) in cases.iter().zip(&expected) {
        let a: Vec<&str> = case.a.iter().map(String::as_str).collect();
        let b: Vec<&str> = case.b.iter().map(String::as_str).collect();
        let diff = unified_diff(&a, &b, &case.fromfile, &case.tofile, case.n);
        let sm = SequenceMatcher::with_autojunk(&a, &b, case.autojunk);
        let blocks: Vec<Value> = sm.get_matching_blocks().iter().map(|m| json!([m.a, m.b, m.size])).collect();
        let opcodes: Vec<Value> =
            sm.get_opcodes().iter().map(|o| json!([o.tag.as_str(), o.i1, o.i2, o.j1, o.j2])).collect();
        let got = json!({ "diff": diff, "blocks": blocks, "opcodes": opcodes });
        if &got != exp {
            return Err(TestCaseError::fail(format!(
                "mismatch with CPython difflib\ncase: {}\nexpected: {exp}\ngot:      {got}",
                case.to_json()
            )));
        }
    }
    Ok(())
}

/// Lines with many repeats: code-like lines, a blank line, non-ASCII, CRLF.
const ALPHABET: &[&str] = &["a\n", "b\n", "\n", "    pass\n", "x = 1\n", "# é ✓\n", "c\r\n", "def f():\n"];

fn small_line() -> impl Strategy<Value = String> {
    (0..ALPHABET.len()).prop_map(|i| ALPHABET[i].to_string())
}

/// Mostly a few very common lines (popular once b has 200+ lines), some rare ones.
fn large_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0..5usize).prop_map(|i| ALPHABET[i].to_string()),
        2 => (0..400usize).prop_map(|i| format!("line {i}\n")),
    ]
}

/// One of 70 lines: in 200-300 lines each occurs about `len // 100 + 1` times.
fn threshold_line() -> impl Strategy<Value = String> {
    (0..70usize).prop_map(|i| format!("t{i}\n"))
}

/// `base` edited by inserts, deletes and replacements at arbitrary positions.
fn apply_edits(base: &[String], edits: Vec<(u8, Index, String)>) -> Vec<String> {
    let mut out = base.to_vec();
    for (kind, at, line) in edits {
        match kind {
            0 => out.insert(at.index(out.len() + 1), line),
            1 if !out.is_empty() => {
                out.remove(at.index(out.len()));
            }
            2 if !out.is_empty() => {
                let i = at.index(out.len());
                out[i] = line;
            }
            _ => {}
        }
    }
    out
}

/// Drops the line ending of the last line (as for a file without a final newline).
fn strip_last_eol(lines: &mut [String], strip: bool) {
    if let Some(last) = lines.last_mut()
        && strip
        && last.len() > 1
    {
        last.pop();
    }
}

fn pair_strategy() -> impl Strategy<Value = (Vec<String>, Vec<String>)> {
    let edits = |line: BoxedStrategy<String>, max: usize| vec((0..3u8, any::<Index>(), line), 0..max);
    prop_oneof![
        // Independent short lists over the small alphabet (incl. empty ones).
        3 => (vec(small_line(), 0..20), vec(small_line(), 0..20)),
        // b is an edited copy of a (identical when there are no edits).
        4 => (vec(small_line(), 0..40), edits(small_line().boxed(), 6))
            .prop_map(|(a, e)| { let b = apply_edits(&a, e); (a, b) }),
        // Identical inputs.
        1 => vec(small_line(), 0..30).prop_map(|a| (a.clone(), a)),
        // 200+ lines with popular lines in b (autojunk), lengths around 200.
        2 => (vec(large_line(), 190..400), edits(large_line().boxed(), 25))
            .prop_map(|(a, e)| { let b = apply_edits(&a, e); (a, b) }),
        // 200-300 lines over 70 lines: counts straddle the popularity
        // threshold len(b) // 100 + 1.
        1 => (vec(threshold_line(), 195..310), edits(threshold_line().boxed(), 25))
            .prop_map(|(b, e)| { let a = apply_edits(&b, e); (a, b) }),
    ]
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let names = prop::sample::select(vec!["", "a.py", "a/x y.py", "b/ünï.py"]);
    (pair_strategy(), any::<(bool, bool)>(), 0..5usize, names.clone(), names, prop::bool::weighted(0.8)).prop_map(
        |((mut a, mut b), (na, nb), n, from, to, autojunk)| {
            strip_last_eol(&mut a, na);
            strip_last_eol(&mut b, nb);
            Case { a, b, n, fromfile: from.to_string(), tofile: to.to_string(), autojunk }
        },
    )
}

/// 4 proptest cases × 64 diffs = 256 diffs, in 4 `python3` calls. The seed is
/// fixed unless `PROPTEST_RNG_SEED` is set; failures are shrunk (one python3
/// call per step), not persisted.
#[test]
fn differential_against_cpython_difflib() {
    let mut config = Config { cases: 4, failure_persistence: None, max_shrink_iters: 64, ..Config::default() };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x0d1f_f11b);
    }
    let mut runner = TestRunner::new(config);
    let result = runner.run(&vec(case_strategy(), 64), |cases| check_against_python(&cases));
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Deterministic large cases that certainly exercise autojunk (checked via
/// `popular_count`), with both settings of `autojunk` and several `n`.
#[test]
fn differential_autojunk_cases() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |k: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % k) as usize
    };
    let mut cases = Vec::new();
    for round in 0..12 {
        let len = 200 + next(300);
        let a: Vec<String> = (0..len)
            .map(|_| match next(10) {
                0..=5 => ALPHABET[next(4)].to_string(),
                _ => format!("    v{} = {}\n", next(60), next(3)),
            })
            .collect();
        let mut b = a.clone();
        for _ in 0..(1 + next(30)) {
            let i = next(b.len() as u64);
            match next(3) {
                0 => b.insert(i, ALPHABET[next(8)].to_string()),
                1 => {
                    b.remove(i);
                }
                _ => b[i] = format!("new {}\n", next(20)),
            }
        }
        let sm = SequenceMatcher::new(&a, &b);
        assert!(b.len() >= 200 && sm.popular_count() > 0);
        cases.push(Case {
            a,
            b,
            n: [0, 3, 1, 5][round % 4],
            fromfile: "a/big.py".into(),
            tofile: "b/big.py".into(),
            autojunk: round % 3 != 0,
        });
    }
    // b of exactly 199..=201, 299..=301, 399..=401 lines over an alphabet sized
    // so that line counts straddle the threshold `len(b) // 100 + 1`.
    for (round, len) in [199, 200, 201, 299, 300, 301, 399, 400, 401].into_iter().cycle().take(18).enumerate() {
        let ntest = len / 100 + 1;
        let k = (2 * len / (2 * ntest + 1)) as u64;
        let b: Vec<String> = (0..len).map(|_| format!("t{}\n", next(k))).collect();
        let mut a = b.clone();
        for _ in 0..(1 + next(20)) {
            let i = next(a.len() as u64);
            match next(3) {
                0 => a.insert(i, format!("t{}\n", next(k))),
                1 => {
                    a.remove(i);
                }
                _ => a[i] = format!("t{}\n", next(k)),
            }
        }
        cases.push(Case { a, b, n: round % 4, fromfile: "a/t.py".into(), tofile: "b/t.py".into(), autojunk: true });
    }
    if let Err(e) = check_against_python(&cases) {
        panic!("{e}");
    }
}
