//! The merge against its oracle, `git merge-file -p --diff3` (on PATH).

use std::process::Command;

use proptest::prelude::*;

use super::*;

const LABELS: Labels<'static> = Labels { ours: "ours", base: "base", theirs: "theirs" };

/// `git merge-file -p --diff3`'s output and its conflict count.
fn git_merge(base: &str, ours: &str, theirs: &str) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (o, b, t) = (write("ours", ours), write("base", base), write("theirs", theirs));
    let out = Command::new("git")
        .args(["merge-file", "-p", "--diff3", "-L", "ours", "-L", "base", "-L", "theirs"])
        .arg(&o)
        .arg(&b)
        .arg(&t)
        .output()
        .expect("git on PATH");
    let code = out.status.code().expect("git exited");
    assert!((0..127).contains(&code), "git merge-file failed: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), code as usize)
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn ours_merge(base: &str, ours: &str, theirs: &str) -> (String, usize) {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let m = merge3(&b, &o, &t);
    (m.render(&b, &o, &t, Some(LABELS), "\n"), m.conflicts().count())
}

#[test]
fn carries_a_change_beside_an_edit() {
    let base = "def f(x):\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    return a\n";
    let ours = "def f(x):\n    a = 10\n    b = 2\n    c = 3\n    d = 4\n    return a\n";
    let theirs = "def f(x):\n    a = 1\n    b = 2\n    c = 3\n    d = 40\n    return a\n";
    let (text, conflicts) = ours_merge(base, ours, theirs);
    assert_eq!((text.clone(), conflicts), git_merge(base, ours, theirs));
    assert_eq!(conflicts, 0);
    assert!(text.contains("a = 10") && text.contains("d = 40"));
}

#[test]
fn conflict_is_written_as_git_writes_it() {
    let base = "x\na\ny\n";
    let ours = "x\nb\ny\n";
    let theirs = "x\nc\ny\n";
    let got = ours_merge(base, ours, theirs);
    assert_eq!(got, git_merge(base, ours, theirs));
    assert_eq!(got.0, "x\n<<<<<<< ours\nb\n||||||| base\na\n=======\nc\n>>>>>>> theirs\ny\n");
}

#[test]
fn adjacent_changes_conflict_as_in_git() {
    let base = "a\nb\nc\n";
    let ours = "A\nb\nc\n";
    let theirs = "a\nB\nc\n";
    let got = ours_merge(base, ours, theirs);
    assert_eq!(got, git_merge(base, ours, theirs));
    assert_eq!(got.1, 1);
}

#[test]
fn same_change_on_both_sides_is_no_conflict() {
    let base = "a\nb\nc\n";
    let both = "a\nB\nc\n";
    assert_eq!(ours_merge(base, both, both), (both.to_string(), 0));
    assert_eq!(git_merge(base, both, both), (both.to_string(), 0));
}

#[test]
fn output_ranges_locate_each_chunk() {
    let (base, ours, theirs) = (lines("x\na\ny\nz\n"), lines("x\nb\ny\nz\n"), lines("x\nc\ny\nZ\nW\n"));
    eprintln!("imara {:?}", imara_ops(&base, &ours));
    eprintln!(
        "blocks {:?}",
        matching_blocks(&base, &ours, Alignment::Myers).iter().map(|b| (b.a, b.b, b.len)).collect::<Vec<_>>()
    );
    let m = merge3(&base, &ours, &theirs);
    let text = m.render(&base, &ours, &theirs, Some(LABELS), "\n");
    let out = lines(&text);
    for (c, r) in m.chunks.iter().zip(m.output_ranges(true)) {
        match c.kind {
            ChunkKind::Conflict => {
                assert!(out[r.start].starts_with("<<<<<<<") && out[r.end - 1].starts_with(">>>>>>>"))
            }
            ChunkKind::Theirs => assert_eq!(out[r.clone()], theirs[c.theirs.clone()]),
            _ => assert_eq!(out[r.clone()], ours[c.ours.clone()]),
        }
    }
    assert_eq!(m.output_ranges(true).last().unwrap().end, out.len());
}

/// Texts like code: mostly distinct lines, with blank lines and a few
/// common ones repeated (a tiny alphabet would make most alignments
/// ambiguous, where git's and ours may legitimately differ).
fn text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => (0..40u32).prop_map(|i| format!("    x{i} = f(x)\n")),
        1 => Just("\n".to_string()),
        1 => Just("    return x\n".to_string()),
    ];
    prop::collection::vec(line, 0..12).prop_map(|v| v.concat())
}

/// `ours` and `theirs` as edits of `base`: a few lines replaced, removed or inserted.
fn descendant(base: String) -> impl Strategy<Value = String> {
    let n = base.lines().count();
    prop::collection::vec((0..=n, 0..3usize, text()), 0..3).prop_map(move |edits| {
        let mut l: Vec<String> = base.split_inclusive('\n').map(str::to_string).collect();
        for (at, del, ins) in edits {
            let at = at.min(l.len());
            let end = (at + del).min(l.len());
            l.splice(at..end, ins.split_inclusive('\n').map(str::to_string));
        }
        l.concat()
    })
}

fn triple() -> impl Strategy<Value = (String, String, String)> {
    text().prop_flat_map(|b| (Just(b.clone()), descendant(b.clone()), descendant(b)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Where git merges cleanly, so do we; and to the same text where no
    /// line repeats in any of the three texts (with repeated lines several
    /// alignments are equally short, and which one git's xdiff picks is its
    /// own heuristics': a clean merge can then place a change one copy of
    /// the line apart — both are correct merges).
    #[test]
    fn agrees_with_git_merge_file((base, ours, theirs) in triple()) {
        let (text, conflicts) = ours_merge(&base, &ours, &theirs);
        let (git_text, git_conflicts) = git_merge(&base, &ours, &theirs);
        let unique = |t: &str| {
            let all: Vec<&str> = t.split_inclusive('\n').collect();
            all.iter().collect::<std::collections::HashSet<_>>().len() == all.len()
        };
        if git_conflicts == 0 {
            prop_assert_eq!(conflicts, 0, "git merged cleanly:\n{}", git_text);
            if unique(&base) && unique(&ours) && unique(&theirs) {
                prop_assert_eq!(text, git_text);
            }
        }
    }

    /// Nothing changed upstream: the result is ours; ours is the base: the result is theirs.
    #[test]
    fn one_sided_merges((base, ours, theirs) in triple()) {
        prop_assert_eq!(ours_merge(&base, &ours, &base), (ours.clone(), 0));
        prop_assert_eq!(ours_merge(&base, &base, &theirs), (theirs.clone(), 0));
    }
}
