//! Porting a patch onto a new upstream: a three-way merge of (old upstream
//! target, the patch's source in its config, new upstream target) that
//! carries upstream's changes into the patch and locates the rest.
//!
//! A patch and its target do not look alike line for line: the patch is a
//! module-level `def forward_patched(self, …)` (or `class …`) under the
//! config's DSL decorators (`@config.override_method(…)`) and column-0
//! comments, while its target is indented in its class under its own name.
//! `port` merges them *modulo* that: it holds out the leading comments and
//! every decorator (the DSL's, and the upstream ones a patch keeps or drops
//! on purpose: carrying `@force_accelerate_hooks(…)` into a config would
//! also need its import; `survey` reports decorator changes), removes the
//! patch's common indentation, gives the definition the target's name,
//! merges with `patchgen_python::merge` (`git merge-file --diff3`
//! semantics) against the dedented targets without their decorators, then
//! puts name, indentation and held-out lines back. A patch the merge
//! leaves alone comes back byte for byte. A signature both sides changed
//! is merged parameter by parameter (`signature`), the body line by line.
//! Without conflict markers, a result that no longer parses is not
//! written: the patch stays, its upstream changes listed as conflicts.
//!
//! Pure: texts in, a text and its hunks out. `bump` ports every patch of a
//! project; `new` ports a sibling's patch onto a new model's upstream.

mod signature;
#[cfg(test)]
mod tests;

use std::ops::Range;

pub use patchgen_python::merge::is_marker;
use patchgen_python::merge::{ChunkKind, Labels, merge3};
use patchgen_python::pytext;

use crate::codegen::text::paren_balance;
use signature::Outcome;

/// What to port: the patch as written in its config, and the two versions
/// of its upstream target as `inspect.getsource` gives them (decorators
/// included, indented as in the upstream file).
#[derive(Clone, Copy, Debug)]
pub struct PortRequest<'a> {
    /// The patch's source, as in the config file (leading comments and DSL
    /// decorators included).
    pub patch: &'a str,
    /// The name the patch defines (`forward_patched`).
    pub patch_name: &'a str,
    pub old: &'a str,
    pub new: &'a str,
    /// The name the target defines upstream (`forward`).
    pub target_name: &'a str,
    /// Conflict marker labels (`config`, `transformers 5.9.0`,
    /// `transformers 5.16.1`); `None`: a conflict keeps the patch's lines
    /// (and is only reported).
    pub labels: Option<Labels<'a>>,
}

/// What became of one region upstream changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HunkStatus {
    /// The patch kept those upstream lines as they were: the change is carried.
    Carried,
    /// The patch already has the new upstream lines.
    AlreadyInPatch,
    /// The patch rewrote lines upstream changed too.
    Conflict,
}

/// One upstream change and where it lands. Ranges are 0-based line
/// indexes: `old`/`new` in the targets' texts, `patch` in the patch's
/// text, `result` in the ported text (a conflict's spans its markers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortHunk {
    pub status: HunkStatus,
    pub old: Range<usize>,
    pub new: Range<usize>,
    pub patch: Range<usize>,
    pub result: Range<usize>,
}

/// A ported patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ported {
    /// The patch's new source, shaped as the patch was (conflicts written
    /// with git's diff3 markers at column 0).
    pub text: String,
    pub hunks: Vec<PortHunk>,
}

impl Ported {
    pub fn carried(&self) -> usize {
        self.hunks.iter().filter(|h| h.status == HunkStatus::Carried).count()
    }

    pub fn conflicts(&self) -> usize {
        self.hunks.iter().filter(|h| h.status == HunkStatus::Conflict).count()
    }
}

/// The patch split into what is merged and what is held out.
struct Normalized<'a> {
    /// Leading comments, blank lines and decorators, as written.
    held: Vec<&'a str>,
    /// The common indentation removed from `body`.
    indent: &'a str,
    /// The rest, dedented, the definition renamed to the target's name.
    body: Vec<String>,
    /// Whether the source ended without a line break.
    no_final_newline: bool,
}

/// The three texts `port` merges, as `git merge-file` would be given them:
/// the old target, the patch (held-out lines gone, dedented, renamed to the
/// target's name) and the new target. For comparing with git.
pub fn merge_inputs(req: &PortRequest<'_>) -> [String; 3] {
    let patch = normalize_patch(req.patch, req.patch_name, req.target_name);
    [upstream_lines(req.old).concat(), patch.body.concat(), upstream_lines(req.new).concat()]
}

/// Carry the upstream change `old` → `new` into `patch`.
pub fn port(req: &PortRequest<'_>) -> Ported {
    let patch = normalize_patch(req.patch, req.patch_name, req.target_name);
    let old = upstream_lines(req.old);
    let new = upstream_lines(req.new);
    let held = patch.held.len();
    // Both sides changed the signature: merged parameter by parameter, the
    // bodies line by line. A signature that cannot be read parameter by
    // parameter (comments in it) goes through the line merge, unless that
    // names a parameter twice: then it is a conflict.
    let signature = signature::merge(&old, &patch.body, &new)
        .filter(|s| {
            let base = &old[..s.base_lines];
            base != &new[..s.theirs_lines] && base != &patch.body[..s.ours_lines]
        })
        .and_then(|s| match s.outcome {
            Outcome::Lines
                if !names_a_parameter_twice(&merge3(&old, &patch.body, &new).render(
                    &old,
                    &patch.body,
                    &new,
                    None,
                    "\n",
                )) =>
            {
                None
            }
            Outcome::Lines => Some(signature::Merged { outcome: Outcome::Conflict, ..s }),
            _ => Some(s),
        });
    let (skip, mut merged, mut hunks) = match &signature {
        Some(s) => {
            let ours_sig = &patch.body[..s.ours_lines];
            let (status, lines) = match &s.outcome {
                Outcome::Merged(lines) if lines.as_slice() == ours_sig => (HunkStatus::AlreadyInPatch, lines.clone()),
                Outcome::Merged(lines) => (HunkStatus::Carried, lines.clone()),
                // A conflict over the whole signature, written as git writes one.
                _ => (
                    HunkStatus::Conflict,
                    match req.labels {
                        Some(l) => conflict_lines(l, ours_sig, &old[..s.base_lines], &new[..s.theirs_lines]),
                        None => ours_sig.to_vec(),
                    },
                ),
            };
            let hunk = PortHunk {
                status,
                old: 0..s.base_lines,
                new: 0..s.theirs_lines,
                patch: held..held + s.ours_lines,
                result: held..held + lines.len(),
            };
            ((s.base_lines, s.ours_lines, s.theirs_lines), lines.concat(), vec![hunk])
        }
        None => ((0, 0, 0), String::new(), Vec::new()),
    };
    let (old_body, ours_body, new_body) = (&old[skip.0..], &patch.body[skip.1..], &new[skip.2..]);
    let m = merge3(old_body, ours_body, new_body);
    let result_offset = held + merged.lines().count();
    merged.push_str(&m.render(old_body, ours_body, new_body, req.labels, "\n"));
    hunks.extend(m.chunks.iter().zip(m.output_ranges(req.labels.is_some())).filter_map(|(c, r)| {
        let status = match c.kind {
            ChunkKind::Unchanged | ChunkKind::Ours => return None,
            ChunkKind::Theirs => HunkStatus::Carried,
            ChunkKind::Same => HunkStatus::AlreadyInPatch,
            ChunkKind::Conflict => HunkStatus::Conflict,
        };
        Some(PortHunk {
            status,
            old: c.base.start + skip.0..c.base.end + skip.0,
            new: c.theirs.start + skip.2..c.theirs.end + skip.2,
            patch: c.ours.start + held + skip.1..c.ours.end + held + skip.1,
            result: r.start + result_offset..r.end + result_offset,
        })
    }));
    // Without markers, a carried hunk beside a kept conflict can leave code
    // that does not parse (upstream's `else:` after the patch's own): the
    // patch then stays as it was, every upstream change of it listed.
    if req.labels.is_none()
        && hunks.iter().any(|h| h.status == HunkStatus::Carried)
        && ruff_python_parser::parse_module(&merged).is_err()
        && ruff_python_parser::parse_module(&patch.body.concat()).is_ok()
    {
        for h in &mut hunks {
            if h.status == HunkStatus::Carried {
                h.status = HunkStatus::Conflict;
            }
            h.result = h.patch.clone();
        }
        return Ported { text: req.patch.to_string(), hunks };
    }
    let mut text: String = patch.held.concat();
    for line in merged.split_inclusive('\n') {
        let line = rename_definition(line, req.target_name, req.patch_name);
        if !patch.indent.is_empty() && !is_marker(&line) && !pytext::is_blank(&line) {
            text.push_str(patch.indent);
        }
        text.push_str(&line);
    }
    if patch.no_final_newline && text.ends_with('\n') {
        text.pop();
    }
    Ported { text, hunks }
}

/// Whether the `def` the text begins with names a parameter twice (a line
/// merge of two signatures that both added it).
fn names_a_parameter_twice(text: &str) -> bool {
    let Ok(parsed) = ruff_python_parser::parse_module(text) else { return false };
    let Some(ruff_python_ast::Stmt::FunctionDef(def)) = parsed.suite().first() else { return false };
    let mut seen = std::collections::HashSet::new();
    !def.parameters.iter().all(|p| seen.insert(p.name().as_str()))
}

/// git's diff3 conflict: `<<<<<<< ours`, ours, `||||||| base`, base,
/// `=======`, theirs, `>>>>>>> theirs`.
fn conflict_lines(labels: Labels<'_>, ours: &[String], base: &[String], theirs: &[String]) -> Vec<String> {
    let mut out = vec![format!("<<<<<<< {}\n", labels.ours)];
    out.extend(ours.iter().cloned());
    out.push(format!("||||||| {}\n", labels.base));
    out.extend(base.iter().cloned());
    out.push("=======\n".to_string());
    out.extend(theirs.iter().cloned());
    out.push(format!(">>>>>>> {}\n", labels.theirs));
    out
}

fn normalize_patch<'a>(patch: &'a str, patch_name: &str, target_name: &str) -> Normalized<'a> {
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    let held = definition_start(&lines);
    let rest = &lines[held..];
    let indent = rest.first().map(|l| &l[..l.len() - pytext::lstrip(l).len()]).unwrap_or("");
    let mut renamed = false;
    let body = rest
        .iter()
        .map(|l| {
            let mut l = l.strip_prefix(indent).unwrap_or(l).to_string();
            if !l.ends_with('\n') {
                l.push('\n');
            }
            if !renamed {
                let r = rename_definition(&l, patch_name, target_name);
                renamed = r != l;
                return r;
            }
            l
        })
        .collect();
    Normalized {
        held: lines[..held].to_vec(),
        indent,
        body,
        no_final_newline: !patch.is_empty() && !patch.ends_with('\n'),
    }
}

/// An upstream target's lines, dedented, each ending in a line break.
fn upstream_lines(text: &str) -> Vec<String> {
    let dedented = pytext::dedent(text);
    let lines: Vec<&str> = dedented.split_inclusive('\n').collect();
    let definition = definition_start(&lines);
    lines[definition..].iter().map(|l| if l.ends_with('\n') { l.to_string() } else { format!("{l}\n") }).collect()
}

/// The index of the `def`/`class` line: past the decorators (followed
/// through their parentheses), comments and blank lines above it.
fn definition_start(lines: &[&str]) -> usize {
    let (mut i, mut depth) = (0, 0i64);
    while i < lines.len() {
        let s = pytext::strip(lines[i]);
        if depth > 0 {
            depth += paren_balance(s);
        } else if s.starts_with('@') {
            depth = paren_balance(s);
        } else if !(s.is_empty() || s.starts_with('#')) {
            break;
        }
        i += 1;
    }
    i
}

/// `def from(` / `async def from(` / `class from(`/`:` at column 0, renamed to `to`.
fn rename_definition(line: &str, from: &str, to: &str) -> String {
    if from == to {
        return line.to_string();
    }
    for kw in ["def ", "async def ", "class "] {
        let Some(rest) = line.strip_prefix(kw) else { continue };
        let Some(after) = rest.strip_prefix(from) else { continue };
        if after.starts_with('(') || (kw == "class " && after.starts_with(':')) {
            return format!("{kw}{to}{after}");
        }
    }
    line.to_string()
}
