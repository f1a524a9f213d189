//! PG501 patch-markers: `# --- Patch.N ---` markers that do not come in pairs, or numbers the header block does not list (off by default).
//!
//! ## What it does
//! For every replacement a config file defines (functions and classes
//! registered with `override_method`, `replace_function`, `replace_class`),
//! reads the numbered header comment block above it (`# 1. <what> — <why>`)
//! and the inline `# --- Patch.N ---` markers inside it. Reports a number
//! whose markers are not paired (an odd count) and a marker number the
//! header does not list. Replacements imported from another config are
//! checked in the config that defines them.
//!
//! ## Why is this bad?
//! The markers are the protocol's self-documenting diff: they survive into
//! the generated module and tell a reviewer which lines differ from upstream
//! and why. An unclosed marker makes the rest of the function look patched;
//! a number without a header entry explains nothing. VeOmni itself leaves
//! many markers unpaired, which is why this rule is off by default.
//!
//! ## Example
//! ```python
//! # Patch: Qwen3VLVisionModel.forward
//! # 1. SP pad pos_embeds
//! @config.override_method("Qwen3VLVisionModel.forward")
//! def forward(self, hidden_states, grid_thw, **kwargs):
//!     # --- Patch.1 ---
//!     pos_embeds = sp_pad(pos_embeds)
//!     # --- Patch.2 ---
//!     rotary = rotary.reshape(total, -1)
//! ```
//!
//! ## Use instead
//! ```python
//! # Patch: Qwen3VLVisionModel.forward
//! # 1. SP pad pos_embeds
//! # 2. reshape with the un-sliced total length
//! @config.override_method("Qwen3VLVisionModel.forward")
//! def forward(self, hidden_states, grid_thw, **kwargs):
//!     # --- Patch.1 ---
//!     pos_embeds = sp_pad(pos_embeds)
//!     # --- Patch.1 ---
//!     # --- Patch.2 ---
//!     rotary = rotary.reshape(total, -1)
//!     # --- Patch.2 ---
//! ```

use ruff_text_size::Ranged;

use super::super::{LintContext, Rule, pyfacts};
use patchgen_diagnostics::{Diagnostic, Location, Severity};

pub const RULE: Rule = Rule {
    code: "PG501",
    name: "patch-markers",
    default_on: false,
    severity: Severity::Info,
    doc: include_str!("pg501_patch_markers.rs"),
    check,
    check_project: None,
};

/// `N` of a `# --- Patch.N ---` marker line.
pub fn marker_number(line: &str) -> Option<&str> {
    let t = line.trim_start().strip_prefix('#')?.trim();
    let rest = t.strip_prefix("---")?.trim_start().strip_prefix("Patch.")?;
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (n, tail) = rest.split_at(end);
    (!n.is_empty() && tail.trim().trim_end_matches('-').trim().is_empty()).then_some(n)
}

/// `N` of a header entry `# N. text`.
pub fn header_number(line: &str) -> Option<&str> {
    let t = line.trim_start().strip_prefix('#')?.trim_start();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    (end > 0 && t[end..].starts_with('.')).then_some(&t[..end])
}

/// Problems of one definition: `lines` are the file's lines, `header` the
/// 0-based range of its leading comment block, `body` its own lines.
/// Returns `(0-based line, message)`.
pub fn problems(lines: &[&str], header: std::ops::Range<usize>, body: std::ops::Range<usize>) -> Vec<(usize, String)> {
    let listed: Vec<&str> = lines[header].iter().filter_map(|l| header_number(l)).collect();
    let mut markers: Vec<(&str, Vec<usize>)> = Vec::new();
    for i in body {
        if let Some(n) = marker_number(lines[i]) {
            match markers.iter_mut().find(|(m, _)| *m == n) {
                Some((_, at)) => at.push(i),
                None => markers.push((n, vec![i])),
            }
        }
    }
    let mut out = Vec::new();
    for (n, at) in &markers {
        if !listed.contains(n) {
            out.push((
                at[0],
                format!("`# --- Patch.{n} ---` has no entry `# {n}. ...` in the header block above the definition"),
            ));
        }
        if at.len() % 2 == 1 {
            let last = *at.last().expect("at least one");
            out.push((
                last,
                format!("`# --- Patch.{n} ---` is not closed: {} marker(s) for number {n}, expected pairs", at.len()),
            ));
        }
    }
    out.sort();
    out
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let config = &ctx.config;
    let lines: Vec<&str> = config.text.lines().collect();
    let mut seen: Vec<usize> = Vec::new();
    for p in &ctx.plan.patches {
        let Some(object) = &p.replacement else {
            continue;
        };
        if object.defined_at.path != config.path || seen.contains(&object.defined_at.line) {
            continue;
        }
        seen.push(object.defined_at.line);
        let Some(def) = pyfacts::definition_at(config, &object.name, object.defined_at.line) else {
            continue;
        };
        let decorators = match def {
            pyfacts::Definition::Function(f) => &f.decorator_list,
            pyfacts::Definition::Class(c) => &c.decorator_list,
        };
        let first = decorators.first().map_or(def.range().start(), |d| d.start());
        let first_line = config.line_of(first) - 1;
        let last_line = config.line_of(def.range().end()) - 1;
        let mut header_start = first_line;
        while header_start > 0 && lines[header_start - 1].trim_start().starts_with('#') {
            header_start -= 1;
        }
        for (line, message) in problems(&lines, header_start..first_line, first_line..last_line + 1) {
            let d = RULE
                .diagnostic(format!("`{}`: {message}", object.name))
                .help("number each change in the header block above the definition and bracket its lines with a pair of `# --- Patch.N ---` markers")
                .at(Location::line(config.path.clone(), line + 1));
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_headers() {
        assert_eq!(marker_number("    # --- Patch.12 ---"), Some("12"));
        assert_eq!(marker_number("# --- Patch.3 ---  "), Some("3"));
        assert_eq!(marker_number("# --- Patch.x ---"), None);
        assert_eq!(marker_number("x = 1  # --- Patch.1 ---"), None);
        assert_eq!(header_number("# 2. reshape — because"), Some("2"));
        assert_eq!(header_number("#    - 2 items"), None);
        assert_eq!(header_number("# 2026 was a year"), None);
    }

    #[test]
    fn unpaired_and_unlisted() {
        let src = "# Patch: f\n# 1. a\n# 2. b\n@deco\ndef f():\n    # --- Patch.1 ---\n    x = 1\n    # --- Patch.1 ---\n    # --- Patch.2 ---\n    y = 2\n    # --- Patch.3 ---\n    z = 3\n    # --- Patch.3 ---\n";
        let lines: Vec<&str> = src.lines().collect();
        let got = problems(&lines, 0..3, 3..lines.len());
        let at: Vec<usize> = got.iter().map(|(l, _)| *l).collect();
        assert_eq!(at, vec![8, 10]);
        assert!(got[0].1.contains("not closed"));
        assert!(got[1].1.contains("no entry"));
    }
}
