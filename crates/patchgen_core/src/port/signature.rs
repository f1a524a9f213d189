//! A function signature merged parameter by parameter, for `port`.
//!
//! When the patch and upstream both changed a `def`'s signature, a line
//! merge either conflicts (the two edits touch) or, worse, merges cleanly
//! into a signature that names a parameter twice (both sides added
//! `max_seqlen`, on different lines). Here the three signatures are parsed
//! (ruff's parser) and merged as sequences of parameters keyed by name:
//! each parameter either side kept as in the base takes the other side's
//! version (added, removed, re-annotated, re-defaulted); a parameter both
//! added the same way is kept once; the return annotation likewise. The
//! result keeps the patch's order and layout (one parameter per line when
//! the patch's signature spans lines). Both sides changing one parameter
//! differently (or adding the same name differently) is a conflict over
//! the whole signature — never a signature naming a parameter twice. What
//! this cannot read — a comment inside a signature, a body on the `def`
//! line, `/` or a bare `*` — gives `None`, and `port` falls back to the
//! line merge.
//!
//! Pure: the three dedented texts (definition at column 0) in, the merged
//! signature lines out.

use ruff_python_ast::Stmt;
use ruff_text_size::{Ranged, TextRange};

/// One signature: its text split into parameters.
#[derive(Debug)]
struct Signature {
    /// `def name(` (with `async`, the name as written).
    head: String,
    /// Each parameter (`*`, `/` included) as written, keyed by name.
    params: Vec<(String, String)>,
    /// After `)`: ` -> X:` or `:`.
    tail: String,
    /// Lines the signature spans in its text.
    lines: usize,
    /// The indentation of the first parameter's line when the parameters
    /// start on their own line (`None`: on the `def` line).
    param_indent: Option<String>,
    /// Whether `params` can be merged and rendered (no comment, marker or
    /// shared line among them).
    readable: bool,
}

/// What became of the signatures.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Merged parameter by parameter: the signature's lines.
    Merged(Vec<String>),
    /// Both sides changed one parameter differently.
    Conflict,
    /// Not readable parameter by parameter (a comment inside, `/`, a bare
    /// `*`, several parameters on a line): the line merge decides.
    Lines,
}

/// The signatures of the three texts merged, and how many lines the
/// signature spans in each of (base, ours, theirs).
#[derive(Debug, PartialEq, Eq)]
pub struct Merged {
    pub outcome: Outcome,
    pub base_lines: usize,
    pub ours_lines: usize,
    pub theirs_lines: usize,
}

/// Merge the signatures of the `def`s that `base`, `ours` and `theirs`
/// (lines, each with its line break) begin with.
pub fn merge(base: &[String], ours: &[String], theirs: &[String]) -> Option<Merged> {
    let (b, o, t) = (parse(base)?, parse(ours)?, parse(theirs)?);
    let outcome = if b.readable && o.readable && t.readable {
        merge_parsed(&b, &o, &t).map_or(Outcome::Conflict, Outcome::Merged)
    } else {
        Outcome::Lines
    };
    Some(Merged { outcome, base_lines: b.lines, ours_lines: o.lines, theirs_lines: t.lines })
}

/// The merged signature's lines; `None`: the two sides conflict.
fn merge_parsed(b: &Signature, o: &Signature, t: &Signature) -> Option<Vec<String>> {
    let pick = |bv: &str, ov: &str, tv: &str| -> Option<String> {
        if ov == bv || ov == tv {
            Some(tv.to_string())
        } else if tv == bv {
            Some(ov.to_string())
        } else {
            None
        }
    };
    let find = |s: &Signature, k: &str| s.params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut params: Vec<(String, String)> = Vec::new();
    for (k, ov) in &o.params {
        match (find(b, k), find(t, k)) {
            (Some(bv), Some(tv)) => params.push((k.clone(), pick(&bv, ov, &tv)?)),
            // Upstream removed it: gone, unless the patch changed it.
            (Some(bv), None) if *ov == bv => {}
            (Some(_), None) => return None,
            // The patch added it (upstream maybe too, the same way).
            (None, Some(tv)) if tv != *ov => return None,
            (None, _) => params.push((k.clone(), ov.clone())),
        }
    }
    // Upstream's additions, after the parameter they follow upstream.
    for (i, (k, tv)) in t.params.iter().enumerate() {
        if find(b, k).is_some() || find(o, k).is_some() {
            // Kept by upstream; or removed by the patch while upstream
            // changed it: a conflict.
            if let (Some(bv), None) = (find(b, k), find(o, k))
                && bv != *tv
            {
                return None;
            }
            continue;
        }
        let after = t.params[..i].iter().rev().find_map(|(p, _)| params.iter().position(|(n, _)| n == p));
        params.insert(after.map_or(0, |a| a + 1), (k.clone(), tv.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    if !params.iter().all(|(k, _)| seen.insert(k.as_str())) {
        return None;
    }
    let tail = pick(&b.tail, &o.tail, &t.tail)?;
    let head = pick(&b.head, &o.head, &t.head)?;
    Some(render(&head, &params, &tail, o.param_indent.as_deref()))
}

fn render(head: &str, params: &[(String, String)], tail: &str, indent: Option<&str>) -> Vec<String> {
    match indent {
        None => {
            let joined: Vec<&str> = params.iter().map(|(_, v)| v.as_str()).collect();
            vec![format!("{head}{}){tail}\n", joined.join(", "))]
        }
        Some(indent) => {
            let mut lines = vec![format!("{head}\n")];
            lines.extend(params.iter().map(|(_, v)| format!("{indent}{v},\n")));
            lines.push(format!("){tail}\n"));
            lines
        }
    }
}

/// The signature of the `def` the lines begin with.
fn parse(lines: &[String]) -> Option<Signature> {
    let text = lines.concat();
    let parsed = ruff_python_parser::parse_module(&text).ok()?;
    let Some(Stmt::FunctionDef(def)) = parsed.suite().first() else { return None };
    let body_start = def.body.first()?.start().to_usize();
    let open = def.parameters.start().to_usize();
    let close = def.parameters.end().to_usize();
    // The signature ends with the line of its `:` (after the return
    // annotation); the body starts on a later line.
    let after = def.returns.as_ref().map_or(close, |r| r.end().to_usize());
    let sig_end = after + text[after..].find('\n')? + 1;
    if body_start < sig_end {
        return None;
    }
    let sig = &text[..sig_end];
    let mut readable =
        !(sig.contains('#') && has_comment(&parsed, TextRange::new(def.start(), (sig_end as u32).into())));
    let head = text[def.start().to_usize()..open + 1].to_string();
    let tail = text[close..sig_end].trim_end().to_string();
    let inner = &text[open + 1..close - 1];
    let mut params: Vec<(String, String)> = Vec::new();
    let mut markers_at: Vec<(usize, &str)> = Vec::new();
    // `/` and `*` markers: where they sit among the parameters.
    for p in def.parameters.iter() {
        let range: TextRange = p.range();
        let name = p.name().to_string();
        let mut start = range.start().to_usize();
        // `*args` / `**kwargs`: the stars belong to the parameter.
        while start > open + 1 && text.as_bytes()[start - 1] == b'*' {
            start -= 1;
        }
        params.push((name, text[start..range.end().to_usize()].to_string()));
    }
    if !def.parameters.posonlyargs.is_empty() {
        let last = def.parameters.posonlyargs.last()?.end().to_usize();
        markers_at.push((last, "/"));
    }
    if def.parameters.vararg.is_none() && !def.parameters.kwonlyargs.is_empty() {
        let first = def.parameters.kwonlyargs.first()?.start().to_usize();
        markers_at.push((first, "*"));
    }
    // Markers make the order positional; merge only plain signatures.
    readable &= markers_at.is_empty();
    let multiline = inner.contains('\n');
    let param_indent = if multiline {
        let first = inner.trim_start_matches([' ', '\t']).strip_prefix('\n').map(|rest| {
            let line = rest.split('\n').next().unwrap_or("");
            line[..line.len() - line.trim_start().len()].to_string()
        });
        // Several parameters on a line: a layout this cannot keep.
        let per_line = inner.lines().filter(|l| !l.trim().is_empty()).count();
        readable &= first.is_some() && per_line == params.len();
        first
    } else {
        None
    };
    Some(Signature { head, params, tail, lines: sig.matches('\n').count(), param_indent, readable })
}

/// Whether a comment token lies in `range` (a `#` inside a string is none).
fn has_comment(parsed: &ruff_python_parser::Parsed<ruff_python_ast::ModModule>, range: TextRange) -> bool {
    parsed
        .tokens()
        .iter()
        .any(|t| t.kind() == ruff_python_ast::token::TokenKind::Comment && range.contains_range(t.range()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(m: Merged) -> String {
        match m.outcome {
            Outcome::Merged(lines) => lines.concat(),
            other => panic!("{other:?}"),
        }
    }

    fn lines(s: &str) -> Vec<String> {
        s.split_inclusive('\n').map(str::to_string).collect()
    }

    #[test]
    fn both_sides_add_parameters() {
        let base = lines("def forward(self, x, mask=None):\n    return x\n");
        let ours =
            lines("def forward(\n    self,\n    x,\n    mask=None,\n    max_seqlen=None,\n):\n    return g(x)\n");
        let theirs = lines("def forward(self, x, mask=None, max_seqlen=None, **kwargs):\n    return x\n");
        let m = merge(&base, &ours, &theirs).unwrap();
        assert_eq!((m.base_lines, m.ours_lines, m.theirs_lines), (1, 6, 1));
        assert_eq!(
            merged(m),
            "def forward(\n    self,\n    x,\n    mask=None,\n    max_seqlen=None,\n    **kwargs,\n):\n"
        );
    }

    #[test]
    fn upstream_removes_and_re_annotates() {
        let base = lines("def f(self, a: int, cache_position=None, b=1) -> int:\n    pass\n");
        let ours = lines("def f(self, a: int, cache_position=None, b=1, sp=False) -> int:\n    pass\n");
        let theirs = lines("def f(self, a: int | None, b=1) -> int | None:\n    pass\n");
        let m = merge(&base, &ours, &theirs).unwrap();
        assert_eq!(merged(m), "def f(self, a: int | None, b=1, sp=False) -> int | None:\n");
    }

    #[test]
    fn a_parameter_both_changed_differently_is_a_conflict() {
        let base = lines("def f(self, a=1):\n    pass\n");
        let ours = lines("def f(self, a=2):\n    pass\n");
        let theirs = lines("def f(self, a=3):\n    pass\n");
        assert_eq!(merge(&base, &ours, &theirs).unwrap().outcome, Outcome::Conflict);
        // Both added `max_seqlen`, differently (VeOmni's vision encoders at 5.16.1).
        let ours = lines("def f(self, a=1, max_seqlen: int = 0):\n    pass\n");
        let theirs = lines("def f(self, max_seqlen: int | None = None):\n    pass\n");
        assert_eq!(merge(&base, &ours, &theirs).unwrap().outcome, Outcome::Conflict);
        let commented = lines("def f(\n    self,\n    a=2,  # why\n):\n    pass\n");
        let m = merge(&base, &commented, &lines("def f(self, a=1, b=2):\n    pass\n")).unwrap();
        assert_eq!((m.outcome, m.ours_lines), (Outcome::Lines, 4));
    }
}
