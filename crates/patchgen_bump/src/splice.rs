//! Each patch a bump ports, merged (`patchgen_core::port`) and written back
//! over exactly its own lines of the config that defines it: the DSL
//! decorators and definition `inspect` gives as its source (the comment
//! block above them is left as it is).
//! Nothing else of the file changes; a file whose lines no longer hold that
//! source (edited since evaluation) is left alone and reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use patchgen_core::port::{self, HunkStatus, PortRequest, Ported};
use patchgen_python::diff::unified_diff;
use patchgen_python::merge::Labels;

use crate::select::{Registration, Role, SelectedConfig};

/// What a port did to one registration's patch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub upstream_hunks: usize,
    pub carried: usize,
    pub already_in_patch: usize,
    /// Config lines of the conflicts (their `<<<<<<<` marker, or with
    /// `--conflicts=leave` the patch's first line there), after the write.
    pub conflicts: Vec<usize>,
    /// Why the patch could not be written back.
    pub error: Option<String>,
}

/// A config file and its new text.
#[derive(Clone, Debug)]
pub struct FileEdit {
    pub path: PathBuf,
    pub old: String,
    pub new: String,
}

/// Every port of a run: what each registration got, and the files to write.
#[derive(Clone, Debug, Default)]
pub struct Spliced {
    /// By (config index, registration index).
    pub outcomes: BTreeMap<(usize, usize), Outcome>,
    pub files: Vec<FileEdit>,
}

/// One port placed in its file.
struct Placed {
    at: (usize, usize),
    /// 0-based first line of the patch's source in the file, and its line count.
    start: usize,
    len: usize,
    ported: Ported,
    /// The source had no final line break where the file has one.
    add_newline: bool,
}

/// Port every registration whose role is `Port`; `labels: None` leaves
/// conflicts as the patch has them. With `dump`, the three texts of every
/// merge are written there (`N.base`, `N.ours`, `N.theirs`, `N.target`, and
/// `N.counts`: upstream hunks, carried, conflicts) for a comparison with
/// `git merge-file`.
pub fn splice(configs: &[SelectedConfig], labels: Option<Labels<'_>>, dump: Option<&Path>) -> Spliced {
    let mut by_file: BTreeMap<PathBuf, Vec<(usize, usize, &Registration)>> = BTreeMap::new();
    for (ci, c) in configs.iter().enumerate() {
        for (ri, r) in c.registrations.iter().enumerate() {
            if r.role == Role::Port
                && let Some(o) = &r.object
            {
                by_file.entry(o.defined_at.path.clone()).or_default().push((ci, ri, r));
            }
        }
    }
    let results: Vec<FileSplice> =
        by_file.into_par_iter().map(|(path, regs)| splice_file(&path, &regs, labels, dump)).collect();
    let mut out = Spliced::default();
    for (outcomes, edit) in results {
        out.outcomes.extend(outcomes);
        out.files.extend(edit);
    }
    out
}

/// One config file's outcomes (by (config, registration) index) and its edit, if any.
type FileSplice = (Vec<((usize, usize), Outcome)>, Option<FileEdit>);

fn splice_file(
    path: &Path,
    regs: &[(usize, usize, &Registration)],
    labels: Option<Labels<'_>>,
    dump: Option<&Path>,
) -> FileSplice {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            let error = format!("cannot read {}: {e}", path.display());
            return (
                regs.iter()
                    .map(|&(c, r, _)| ((c, r), Outcome { error: Some(error.clone()), ..Default::default() }))
                    .collect(),
                None,
            );
        }
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut outcomes = Vec::new();
    let mut placed: Vec<Placed> = Vec::new();
    for &(c, r, reg) in regs {
        let (Some(o), Some(old), Some(new)) = (&reg.object, &reg.old, &reg.new) else { continue };
        // The leading comment block (which may stand apart, above blank
        // lines) never changes: only the code from the first decorator on
        // is ported and written back.
        let code: String = o.source.split_inclusive('\n').skip(o.leading).collect();
        let start = if o.code_line > 0 { o.code_line - 1 } else { o.first_line - 1 };
        let len = code.split_inclusive('\n').count();
        let region = lines.get(start..start + len).map(|l| l.concat());
        let add_newline = match region {
            Some(region) if region == code => false,
            Some(region) if region.strip_suffix('\n') == Some(code.as_str()) => true,
            _ => {
                let error = format!(
                    "{}:{}: the file no longer holds the patch `{}` as it was read; rerun bump",
                    path.display(),
                    o.first_line,
                    o.name
                );
                outcomes.push(((c, r), Outcome { error: Some(error), ..Default::default() }));
                continue;
            }
        };
        let request = PortRequest {
            patch: &code,
            patch_name: &o.name,
            old: &old.text,
            new: &new.text,
            target_name: &old.name,
            labels,
        };
        if let Some(dir) = dump {
            let stem = dir.join(format!("{}-{}", path.file_stem().unwrap_or_default().to_string_lossy(), start + 1));
            let [b, p, t] = port::merge_inputs(&request);
            for (ext, text) in [("base", b), ("ours", p), ("theirs", t), ("target", reg.target.clone())] {
                let _ = std::fs::write(stem.with_extension(ext), text);
            }
        }
        let ported = port::port(&request);
        if let Some(dir) = dump {
            let stem = dir.join(format!("{}-{}", path.file_stem().unwrap_or_default().to_string_lossy(), start + 1));
            let counts = format!("{} {} {}\n", ported.hunks.len(), ported.carried(), ported.conflicts());
            let _ = std::fs::write(stem.with_extension("counts"), counts);
        }
        placed.push(Placed { at: (c, r), start, len, ported, add_newline });
    }
    placed.sort_by_key(|p| p.start);
    placed.dedup_by_key(|p| p.start);
    let mut new = String::with_capacity(text.len());
    let mut next = 0;
    let mut delta: isize = 0;
    for p in &placed {
        if p.start < next {
            continue;
        }
        new.push_str(&lines[next..p.start].concat());
        let mut replacement = p.ported.text.clone();
        if p.add_newline {
            replacement.push('\n');
        }
        let new_start = (p.start as isize + delta) as usize;
        let conflicts = p
            .ported
            .hunks
            .iter()
            .filter(|h| h.status == HunkStatus::Conflict)
            .map(|h| new_start + h.result.start + 1)
            .collect();
        outcomes.push((
            p.at,
            Outcome {
                upstream_hunks: p.ported.hunks.len(),
                carried: p.ported.carried(),
                already_in_patch: p.ported.hunks.iter().filter(|h| h.status == HunkStatus::AlreadyInPatch).count(),
                conflicts,
                error: None,
            },
        ));
        delta += replacement.split_inclusive('\n').count() as isize - p.len as isize;
        new.push_str(&replacement);
        next = p.start + p.len;
    }
    new.push_str(&lines[next.min(lines.len())..].concat());
    let edit = (new != text).then(|| FileEdit { path: path.to_path_buf(), old: text, new });
    (outcomes, edit)
}

/// The unified diff of every config a bump would write (`--diff`), paths
/// relative to `root`.
pub fn diff(spliced: &Spliced, root: &Path) -> String {
    let mut out = String::new();
    for f in &spliced.files {
        let rel = f.path.strip_prefix(root).unwrap_or(&f.path).display().to_string();
        let a: Vec<&str> = f.old.split_inclusive('\n').collect();
        let b: Vec<&str> = f.new.split_inclusive('\n').collect();
        out.push_str(&unified_diff(&a, &b, &format!("a/{rel}"), &format!("b/{rel}"), 3));
    }
    out
}

/// Write every changed config atomically.
pub fn write(spliced: &Spliced) -> std::io::Result<()> {
    for f in &spliced.files {
        patchgen_core::atomic::write(&f.path, &f.new)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", f.path.display())))?;
    }
    Ok(())
}
