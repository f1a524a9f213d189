//! A bump rewrites configs in place: like `cargo fix`, it refuses a git work
//! tree with uncommitted changes (so `git diff` shows exactly what it did
//! and `git checkout .` undoes it) unless `--allow-dirty`.

use std::path::Path;
use std::process::Command;

use patchgen_core::error::RunError;

/// `Ok` when `root` is not in a git work tree, or its tree is clean.
pub fn require_clean(root: &Path) -> Result<(), RunError> {
    let out = Command::new("git").arg("-C").arg(root).args(["status", "--porcelain", "--untracked-files=no"]).output();
    let Ok(out) = out else { return Ok(()) };
    if !out.status.success() {
        // Not a git work tree (or no git): nothing to protect.
        return Ok(());
    }
    let changed: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap_or("").lines().collect();
    if changed.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = changed.iter().take(5).map(|l| format!("    {}", l.trim())).collect();
    Err(RunError::Usage(format!(
        "the work tree at {} has uncommitted changes ({} file(s)):\n{}{}\n  help: commit or stash them first, so `git diff` shows what bump changed, or pass --allow-dirty",
        root.display(),
        changed.len(),
        shown.join("\n"),
        if changed.len() > 5 { "\n    …" } else { "" }
    )))
}
