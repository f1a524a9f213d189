//! `port` against `git merge-file --diff3` on the same texts, normalised by
//! hand (the oracle sees the patch dedented and renamed, as a person would
//! write it before running git).

use std::process::Command;

use proptest::prelude::*;

use super::*;

const LABELS: Labels<'static> = Labels { ours: "config", base: "transformers 1.0", theirs: "transformers 2.0" };

fn git_merge(ours: &str, base: &str, theirs: &str) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (o, b, t) = (write("o", ours), write("b", base), write("t", theirs));
    let out = Command::new("git")
        .args(["merge-file", "-p", "--diff3", "-L", LABELS.ours, "-L", LABELS.base, "-L", LABELS.theirs])
        .args([&o, &b, &t])
        .output()
        .expect("git on PATH");
    (String::from_utf8(out.stdout).unwrap(), out.status.code().unwrap() as usize)
}

const OLD: &str = r#"    @can_return_tuple
    def forward(self, hidden_states, attention_mask=None):
        """Run the layer."""
        residual = hidden_states
        hidden_states = self.norm(hidden_states)
        hidden_states = self.attn(hidden_states, attention_mask)
        hidden_states = residual + hidden_states
        return hidden_states
"#;

const NEW: &str = r#"    @can_return_tuple
    def forward(self, hidden_states, attention_mask=None, **kwargs):
        """Run the layer."""
        residual = hidden_states
        hidden_states = self.norm(hidden_states)
        hidden_states = self.attn(hidden_states, attention_mask, **kwargs)
        hidden_states = residual + hidden_states
        return hidden_states
"#;

const PATCH: &str = r#"# Sequence-parallel forward.
@config.override_method(
    "ToyLayer.forward",
    description="sp",
)
@can_return_tuple
def forward_patched(self, hidden_states, attention_mask=None):
    """Run the layer."""
    residual = hidden_states
    hidden_states = self.norm(hidden_states)
    # --- Patch.1 ---
    hidden_states = gather(hidden_states)
    # --- Patch.1 ---
    hidden_states = self.attn(hidden_states, attention_mask)
    hidden_states = residual + hidden_states
    return hidden_states
"#;

fn request<'a>(patch: &'a str, old: &'a str, new: &'a str) -> PortRequest<'a> {
    PortRequest { patch, patch_name: "forward_patched", old, new, target_name: "forward", labels: Some(LABELS) }
}

fn held(patch: &str) -> &str {
    &patch[..patch.find("def forward_patched").unwrap()]
}

/// The patch as git would see it: held-out lines (comments, decorators)
/// gone, the definition renamed.
fn as_git_sees(patch: &str) -> String {
    patch[held(patch).len()..].replace("def forward_patched(", "def forward(")
}

/// An upstream target as git would see it: dedented, decorators gone.
fn target_as_git_sees(text: &str) -> String {
    pytext::dedent(text).lines().filter(|l| !l.starts_with('@')).map(|l| format!("{l}\n")).collect()
}

#[test]
fn carries_upstream_hunks_like_git() {
    let got = port(&request(PATCH, OLD, NEW));
    let (git, conflicts) = git_merge(&as_git_sees(PATCH), &target_as_git_sees(OLD), &target_as_git_sees(NEW));
    assert_eq!(conflicts, 1, "the attn line was rewritten by both");
    let expected = format!("{}{}", held(PATCH), git.replace("def forward(", "def forward_patched("));
    assert_eq!(got.text, expected);
    assert_eq!(got.carried(), 1);
    assert_eq!(got.conflicts(), 1);
    let lines: Vec<&str> = got.text.lines().collect();
    let conflict = got.hunks.iter().find(|h| h.status == HunkStatus::Conflict).unwrap();
    assert!(lines[conflict.result.start].starts_with("<<<<<<< config"));
    assert!(lines[conflict.result.end - 1].starts_with(">>>>>>> transformers 2.0"));
    let patch_lines: Vec<&str> = PATCH.lines().collect();
    assert!(patch_lines[conflict.patch.clone()].iter().any(|l| l.contains("gather")));
    let carried = got.hunks.iter().find(|h| h.status == HunkStatus::Carried).unwrap();
    assert_eq!(
        lines[carried.result.clone()],
        ["def forward_patched(self, hidden_states, attention_mask=None, **kwargs):"]
    );
}

#[test]
fn indented_patch_keeps_its_indentation() {
    let patch: String =
        PATCH.lines().map(|l| if l.is_empty() { "\n".to_string() } else { format!("    {l}\n") }).collect();
    let same = port(&request(&patch, OLD, OLD));
    assert_eq!(same.text, patch);
    let got = port(&request(&patch, OLD, NEW));
    assert!(got.text.contains("    def forward_patched(self, hidden_states, attention_mask=None, **kwargs):\n"));
    assert!(got.text.contains("\n<<<<<<< config\n"), "markers stay at column 0");
}

#[test]
fn conflict_markers_are_recognised() {
    assert!(is_marker("<<<<<<< config\n"));
    assert!(is_marker("||||||| transformers 5.9.0"));
    assert!(is_marker("=======\n"));
    assert!(is_marker(">>>>>>> transformers 5.16.1\r\n"));
    assert!(!is_marker("======= x"));
    assert!(!is_marker("    <<<<<<< config"));
    assert!(!is_marker("<<<<<<<<"));
}

/// A function body: a few statements from a small set, so that random
/// patches and upstream changes overlap often.
fn body() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "    x = 1\n",
            "    y = f(x)\n",
            "    # a comment\n",
            "    z = x + y\n",
            "    if x:\n        x += 1\n",
            "\n",
        ]),
        1..10,
    )
}

fn edit(base: Vec<&'static str>) -> impl Strategy<Value = Vec<&'static str>> {
    let n = base.len();
    (prop::collection::vec((0..=n, 0..2usize, body()), 0..3)).prop_map(move |edits| {
        let mut l = base.clone();
        for (at, del, ins) in edits {
            let at = at.min(l.len());
            let end = (at + del).min(l.len());
            l.splice(at..end, ins);
        }
        l
    })
}

fn target(body: &[&str]) -> String {
    let mut s = "    @dec\n    def forward(self, x):\n".to_string();
    for l in body {
        for line in l.split_inclusive('\n') {
            s.push_str(if line == "\n" { "\n" } else { "    " });
            if line != "\n" {
                s.push_str(line);
            }
        }
    }
    s
}

fn patch_of(body: &[&str]) -> String {
    format!("@config.override_method(\"T.forward\")\n@dec\ndef forward_patched(self, x):\n{}", body.concat())
}

/// Both sides added `max_seqlen` (the patch on its own line, upstream on
/// the `def` line, beside `**kwargs`): git merges the lines cleanly into a
/// signature naming it twice; the port merges parameters and carries the
/// body's change.
#[test]
fn a_parameter_both_sides_added_is_named_once() {
    let old = "    def forward(self, x, mask=None):\n        y = self.norm(x)\n        y = self.dropout(y)\n        return self.attn(y, mask)\n";
    let new = "    def forward(self, x, mask=None, max_seqlen=None, **kwargs):\n        y = self.norm(x)\n        y = self.dropout(y)\n        return self.attn(y, mask, **kwargs)\n";
    let patch = "@config.override_method(\"T.forward\")\ndef forward_patched(\n    self,\n    x,\n    mask=None,\n    max_seqlen=None,\n):\n    y = sp_gather(self.norm(x), max_seqlen)\n    y = self.dropout(y)\n    return self.attn(y, mask)\n";
    let (git, _) = git_merge(&as_git_sees(patch), &upstream_lines(old).concat(), &upstream_lines(new).concat());
    assert_eq!(git.matches("max_seqlen=None").count(), 2, "git names it twice:\n{git}");
    let got = port(&request(patch, old, new));
    assert_eq!(got.conflicts(), 0);
    assert_eq!(
        got.text,
        "@config.override_method(\"T.forward\")\ndef forward_patched(\n    self,\n    x,\n    mask=None,\n    max_seqlen=None,\n    **kwargs,\n):\n    y = sp_gather(self.norm(x), max_seqlen)\n    y = self.dropout(y)\n    return self.attn(y, mask, **kwargs)\n"
    );
}

/// Both sides added `max_seqlen`, differently (VeOmni's vision encoders at
/// 5.16.1): a conflict over the signature, never a signature naming it twice.
#[test]
fn a_parameter_both_sides_added_differently_is_a_signature_conflict() {
    let old = "    def forward(self, x, cu_seqlens, rotary_pos_emb=None, **kwargs):\n        return self.blocks(x, cu_seqlens)\n";
    let new = "    def forward(self, x, cu_seqlens, max_seqlen: int | None = None, **kwargs):\n        return self.blocks(x, cu_seqlens)\n";
    let patch = "@config.override_method(\"T.forward\")\ndef forward_patched(self, x, cu_seqlens, max_seqlen: int, rotary_pos_emb=None, **kwargs):\n    return self.blocks(x, cu_seqlens)\n";
    let got = port(&request(patch, old, new));
    assert_eq!(got.conflicts(), 1);
    assert!(got.text.contains("<<<<<<< config\ndef forward_patched(self, x, cu_seqlens, max_seqlen: int, rotary_pos_emb=None, **kwargs):\n||||||| transformers 1.0\n"), "{}", got.text);
    let left = port(&PortRequest { labels: None, ..request(patch, old, new) });
    assert_eq!((left.text.as_str(), left.conflicts()), (patch, 1));
}

/// Without markers, a carried hunk that cannot stand beside the patch's
/// kept lines (a second `else:`) is not written: the patch stays as it was.
#[test]
fn leave_never_writes_code_that_does_not_parse() {
    let old = "    def forward(self):\n        if a:\n            x = 1\n            v = 2\n        return x\n";
    let new = "    def forward(self):\n        if c:\n            x = 1\n            v = 2\n        else:\n            v = 3\n        return x\n";
    let patch = "@config.override_method(\"T.forward\")\ndef forward_patched(self):\n    if b:\n        x = 1\n    else:\n        x = 0\n        v = 2\n    return x\n";
    let req = PortRequest { labels: None, ..request(patch, old, new) };
    let got = port(&req);
    assert_eq!(got.text, patch);
    assert!(got.conflicts() >= 1 && got.carried() == 0, "{:?}", got.hunks);
}

/// The same with the patch's `# --- Patch.1 ---` comments inside its
/// signature (VeOmni's `Qwen3VLVisionAttention.forward`): not readable
/// parameter by parameter, the line merge would name `max_seqlen` twice, so
/// the signature is a conflict.
#[test]
fn a_commented_signature_that_would_name_a_parameter_twice_is_a_conflict() {
    let old = "    def forward(\n        self,\n        x,\n        cu_seqlens,\n        rotary_pos_emb=None,\n        position_embeddings=None,\n        **kwargs,\n    ):\n        return self.blocks(x, cu_seqlens)\n";
    let new = "    def forward(\n        self,\n        x,\n        cu_seqlens,\n        position_embeddings=None,\n        max_seqlen: int | None = None,\n        **kwargs,\n    ):\n        return self.blocks(x, cu_seqlens)\n";
    let patch = "@config.override_method(\"T.forward\")\ndef forward_patched(\n    self,\n    x,\n    cu_seqlens,\n    # --- Patch.1 ---\n    max_seqlen: int,\n    # --- Patch.1 ---\n    rotary_pos_emb=None,\n    position_embeddings=None,\n    **kwargs,\n):\n    return self.blocks(x, cu_seqlens)\n";
    let (git, _) = git_merge(&as_git_sees(patch), &upstream_lines(old).concat(), &upstream_lines(new).concat());
    assert_eq!(git.matches("max_seqlen:").count(), 2, "git names it twice:\n{git}");
    let left = port(&PortRequest { labels: None, ..request(patch, old, new) });
    assert_eq!(left.text.matches("max_seqlen:").count(), 1, "{}", left.text);
    assert_eq!(left.conflicts(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Upstream did not change: the patch comes back byte for byte.
    #[test]
    fn unchanged_upstream_changes_nothing((b, p) in body().prop_flat_map(|b| (Just(b.clone()), edit(b)))) {
        let (old, patch) = (target(&b), patch_of(&p));
        let got = port(&request(&patch, &old, &old));
        prop_assert_eq!(got.text, patch);
        prop_assert!(got.hunks.is_empty());
    }

    /// The patch is the old upstream (renamed, dedented): the result is the new upstream.
    #[test]
    fn pristine_patch_becomes_new_upstream((b, n) in body().prop_flat_map(|b| (Just(b.clone()), edit(b)))) {
        let got = port(&request(&patch_of(&b), &target(&b), &target(&n)));
        prop_assert_eq!(got.conflicts(), 0);
        prop_assert_eq!(got.text, patch_of(&n));
    }

    /// Every merge git does cleanly, port does cleanly too. (The texts may
    /// differ where this tiny alphabet of repeated statements makes two
    /// alignments equally short; `merge::tests` compares texts on realistic
    /// lines.)
    #[test]
    fn clean_wherever_git_is_clean((b, p, n) in body().prop_flat_map(|b| (Just(b.clone()), edit(b.clone()), edit(b)))) {
        let (patch, old, new) = (patch_of(&p), target(&b), target(&n));
        let (_git, conflicts) = git_merge(&as_git_sees_generic(&patch), &target_as_git_sees(&old), &target_as_git_sees(&new));
        let got = port(&request(&patch, &old, &new));
        if conflicts == 0 {
            prop_assert_eq!(got.conflicts(), 0);
        }
    }
}

fn as_git_sees_generic(patch: &str) -> String {
    patch.split_once("\n@dec\n").unwrap().1.replace("def forward_patched(", "def forward(")
}
