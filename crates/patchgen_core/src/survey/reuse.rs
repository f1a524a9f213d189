//! The sameness test of a reused patch (protocol step 1.7: "prefer reuse
//! when the upstream classes are structural duplicates with only a
//! name-prefix difference"): a replacement written for one upstream target
//! (`Qwen3RMSNorm.forward` in `modeling_qwen3`) and registered, through a
//! `name_map`, on another (`Olmo2RMSNorm.forward` in `modeling_olmo2`)
//! keeps its meaning only when the two upstream targets have the same code
//! once the first is renamed by that `name_map` (the generator's plain-text
//! substitution, longest key first), docstrings and comments aside
//! ([`patchgen_python::pysource::sameness`]).
//!
//! A target is what the generator replaces: a top-level function, a class
//! (its whole text), or the method a class resolves to (its own or a
//! base's, as `Version::lineage` follows them). `lint`'s PG307 and `new`
//! ask this one function.

use std::path::PathBuf;

use ruff_text_size::Ranged;

use super::modules::{self, Version};
use crate::codegen::text::apply_name_map;
use patchgen_python::pysource::sameness::{self, Sameness};

/// One upstream target's text, dedented, and where it is.
#[derive(Clone, Debug)]
pub struct TargetText {
    /// The definition (decorators included), dedented.
    pub text: String,
    pub path: PathBuf,
    /// The file line of `text`'s first line.
    pub first_line: usize,
}

/// Where a target is looked up: a module of an upstream version, a dotted
/// target (`f`, `C`, `C.m`) and whether it is a whole class.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub module: &'a str,
    pub target: &'a str,
    pub is_class: bool,
}

/// The text of `target` in `version`, or `None` when it does not exist.
pub fn target_text(version: &Version, t: Target<'_>) -> Option<TargetText> {
    let (file, range) = if t.is_class {
        let c = version.class(t.module, t.target)?;
        let range = c.def().range();
        (c.file.clone(), range)
    } else if let Some((class, method)) = t.target.split_once('.') {
        let c = version.class(t.module, class)?;
        let lineage = version.lineage(&c);
        let (owner, f) = lineage.method(method)?;
        (owner.file.clone(), f.range())
    } else {
        let file = version.module(t.module).ok()?;
        let range = modules::function(&file, t.target)?.range();
        (file, range)
    };
    let first_line = file.line_of(range.start());
    let start = file.line_start(first_line);
    let text = &file.text[start..usize::from(range.end())];
    Some(TargetText { text: patchgen_python::pytext::dedent(text), path: file.path.clone(), first_line })
}

/// The verdict on one reuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The renamed target the patch was written for has the same code.
    Same,
    /// The code differs: the first differing line of each upstream.
    Differs(Difference),
    /// One of the targets is missing or does not parse: nothing to compare.
    Unresolved(String),
}

/// The first differing upstream line of a reuse, in file lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub written_for_path: PathBuf,
    pub written_for_line: usize,
    pub reused_path: PathBuf,
    pub reused_line: usize,
    /// That line of the reused target's upstream, stripped.
    pub reused_text: String,
}

/// Does the upstream target `reused_at` (in `reused_version`) have the same
/// code as `written_for` (in `written_for_version`) renamed by `name_map`?
pub fn compare(
    written_for_version: &Version,
    written_for: Target<'_>,
    name_map: Option<&[(String, String)]>,
    reused_version: &Version,
    reused_at: Target<'_>,
) -> Verdict {
    let Some(old) = target_text(written_for_version, written_for) else {
        return Verdict::Unresolved(format!("`{}` not found in {}", written_for.target, written_for.module));
    };
    let Some(new) = target_text(reused_version, reused_at) else {
        return Verdict::Unresolved(format!("`{}` not found in {}", reused_at.target, reused_at.module));
    };
    let renamed = apply_name_map(&old.text, name_map);
    match sameness::compare(&renamed, &new.text) {
        Ok(Sameness::Same) => Verdict::Same,
        Ok(Sameness::Differs(d)) => Verdict::Differs(Difference {
            written_for_path: old.path,
            written_for_line: old.first_line + d.old_line - 1,
            reused_path: new.path,
            reused_line: new.first_line + d.new_line - 1,
            reused_text: d.new_text,
        }),
        Err(e) => Verdict::Unresolved(e.to_string()),
    }
}
