//! `patchgen new --dry-run`: the whole pipeline (analysis, writing,
//! generation with ruff, pruning, lint) run in a private copy of the
//! project, so the printed plan is the final one — what pruning dropped
//! and what lint says — while the project itself is not touched (no file,
//! no `.patchgen_cache`, no ruff cache).
//!
//! The copy is a temporary directory holding the project root's files and
//! directories (copied), except the version-control and cache directories
//! (`.git`, `.patchgen_cache`, `.ruff_cache`, `__pycache__`: left out) and
//! the other dot-directories, `node_modules` and `target` (linked: tools,
//! wheels and virtualenvs are read, never written, by `new`). Paths in the
//! report are mapped back to the project's. The copy is removed when the
//! run ends, also on error.

use std::path::{Path, PathBuf};

use super::{NewError, Options, Report};
use patchgen_core::project::Project;

/// Left out of the copy.
const SKIPPED: [&str; 4] = [".git", ".patchgen_cache", ".ruff_cache", "__pycache__"];
/// Linked, not copied (read-only inputs, possibly large).
const LINKED: [&str; 2] = ["node_modules", "target"];

/// Run `new` in a copy of the project and report as if in the project.
pub fn run(opts: &Options) -> Result<Report, NewError> {
    let project = Project::find(&opts.cwd).map_err(|e| NewError::usage(e.to_string()))?;
    let root = patchgen_core::project::resolve(&project.root);
    let tmp = tempfile::Builder::new()
        .prefix("patchgen-new-dry-run-")
        .tempdir()
        .map_err(|e| NewError::failed(format!("--dry-run: cannot create a temporary directory: {e}")))?;
    let copy = tmp.path().join(root.file_name().unwrap_or_else(|| "project".as_ref()));
    copy_tree(&root, &copy, true)
        .map_err(|e| NewError::failed(format!("--dry-run: cannot copy the project to {}: {e}", copy.display())))?;
    let cwd = patchgen_core::project::resolve(&opts.cwd);
    let inner_cwd = match cwd.strip_prefix(&root) {
        Ok(rel) => copy.join(rel),
        Err(_) => copy.clone(),
    };
    let mut args = opts.args.clone();
    args.dry_run = false;
    let result = super::run(&Options { args, cwd: inner_cwd, env: opts.env.clone() });
    let map = |s: &str| s.replace(&copy.display().to_string(), &root.display().to_string());
    let result = match result {
        Ok(mut r) => {
            map_report(&mut r, &copy, &root, &map);
            r.dry_run = true;
            Ok(r)
        }
        // The copy's paths in the message become the project's.
        Err(e) if e.is_usage() => Err(NewError::Usage(map(&e.to_string()))),
        Err(e) => Err(NewError::Failed(map(&e.to_string()))),
    };
    drop(tmp);
    result
}

fn map_report(r: &mut Report, copy: &Path, root: &Path, map: &dyn Fn(&str) -> String) {
    let path = |p: &Path| -> PathBuf {
        match p.strip_prefix(copy) {
            Ok(rel) => root.join(rel),
            Err(_) => p.to_path_buf(),
        }
    };
    r.upstream = map(&r.upstream);
    for f in &mut r.files {
        f.path = path(&f.path);
    }
    for g in &mut r.generation {
        g.message = map(&g.message).replacen("generated ", "would generate ", 1);
    }
    r.lint = map(&r.lint);
    for s in r.warnings.iter_mut().chain(r.next_steps.iter_mut()).chain(r.moe_needs.iter_mut()) {
        *s = map(s);
    }
    for b in &mut r.backends {
        for d in &mut b.retargeted.dropped {
            d.reason = map(&d.reason);
        }
        for c in &mut b.retargeted.carried {
            for t in c.todos.iter_mut().chain(c.notes.iter_mut()).chain(c.copy.iter_mut().map(|c| &mut c.note)) {
                *t = map(t);
            }
        }
    }
}

/// Copy `from` to `to` (see the module doc for what is left out or linked).
fn copy_tree(from: &Path, to: &Path, top: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let name_s = name.to_string_lossy();
        if SKIPPED.contains(&name_s.as_ref()) {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        let ty = entry.file_type()?;
        if ty.is_symlink() {
            let target = std::fs::read_link(&src)?;
            let target = if target.is_relative() { src.parent().unwrap_or(from).join(target) } else { target };
            link(&target, &dst)?;
        } else if ty.is_dir() {
            if top && (name_s.starts_with('.') || LINKED.contains(&name_s.as_ref())) {
                link(&src, &dst)?;
            } else {
                copy_tree(&src, &dst, false)?;
            }
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(not(unix))]
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    if target.is_dir() { copy_tree(target, at, false) } else { std::fs::copy(target, at).map(|_| ()) }
}
