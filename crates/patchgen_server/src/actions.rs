//! Code actions for published diagnostics, as workspace edits on the
//! buffer: PG301's slice-first fix (`patchgen_lint`'s own fix, computed on
//! the function of the buffer the finding points into; offered only when
//! lint would offer it) and `# noqa: CODE` on the finding's line for any
//! lint rule (added to an existing `# noqa:` list).

use std::collections::HashMap;

use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, NumberOrString, Range, TextEdit, Url, WorkspaceEdit,
};
use ruff_python_ast::{Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use crate::text::{offset_of, position_of};
use patchgen_lint::logits_to_keep;
use patchgen_python::semantic::walk::{self, Scope};

/// The actions for `diagnostics` of the buffer `text` at `uri`.
pub fn for_diagnostics(uri: &Url, text: &str, diagnostics: &[&Diagnostic]) -> Vec<CodeActionOrCommand> {
    let mut out = Vec::new();
    for d in diagnostics {
        let Some(NumberOrString::String(code)) = &d.code else { continue };
        if code == logits_to_keep::RULE_CODE
            && let Some((title, edits)) = pg301_fix(text, d.range)
        {
            out.push(action(uri, title, d, edits, true));
        }
        if patchgen_lint::rule(code).is_some_and(|r| r.code == code)
            && let Some(edit) = noqa_edit(text, d.range.start.line as usize, code)
        {
            out.push(action(uri, format!("Suppress {code} on this line (`# noqa: {code}`)"), d, vec![edit], false));
        }
    }
    out
}

fn action(uri: &Url, title: String, d: &Diagnostic, edits: Vec<TextEdit>, preferred: bool) -> CodeActionOrCommand {
    let changes = HashMap::from([(uri.clone(), edits)]);
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![(*d).clone()]),
        edit: Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }),
        is_preferred: Some(preferred),
        ..CodeAction::default()
    })
}

/// PG301's fix of the function holding `range`'s start, as text edits.
pub fn pg301_fix(text: &str, range: Range) -> Option<(String, Vec<TextEdit>)> {
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    let at = TextSize::try_from(offset_of(text, range.start)).ok()?;
    let func = function_holding(&parsed.syntax().body, at)?;
    let fix = logits_to_keep::fix(func, text)?;
    let edits = fix
        .edits
        .iter()
        .map(|e| TextEdit {
            range: Range::new(
                position_of(text, e.range.start().to_usize()),
                position_of(text, e.range.end().to_usize()),
            ),
            new_text: e.content.clone(),
        })
        .collect();
    Some((format!("Slice `{}` first (insert `{0} = {0}[{1}]`)", fix.var, fix.index), edits))
}

/// The innermost function whose statement holds `at` (the last one in
/// pre-order).
fn function_holding(body: &[Stmt], at: TextSize) -> Option<&StmtFunctionDef> {
    walk::statements(body, Scope::All).into_iter().rev().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.range().contains(at) => Some(f),
        _ => None,
    })
}

/// `# noqa: code` on 0-based `line`: appended to the line's `# noqa:`
/// list, or a new comment at its end; `None` when the line already
/// suppresses `code`.
pub fn noqa_edit(text: &str, line: usize, code: &str) -> Option<TextEdit> {
    let start = offset_of(text, lsp_types::Position::new(line as u32, 0));
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let content = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
    let end = start + content.len();
    if let Some(noqa) = patchgen_lint::noqa::parse(content) {
        if noqa.suppresses(code) {
            return None;
        }
        // `# noqa: A, B` → `# noqa: A, B, code` (the list runs to the line's end or the first non-code word).
        let hash = content.to_ascii_lowercase().find("noqa:")?;
        let list_start = hash + "noqa:".len();
        let list = &content[list_start..];
        let list_len = list
            .split_inclusive([',', ' '])
            .take_while(|w| {
                let w = w.trim_matches([',', ' ']);
                w.is_empty()
                    || w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                        && w.chars().any(|c| c.is_ascii_digit())
            })
            .map(str::len)
            .sum::<usize>();
        let insert_at = start + list_start + list[..list_len].trim_end_matches([',', ' ']).len();
        let pos = position_of(text, insert_at);
        return Some(TextEdit { range: Range::new(pos, pos), new_text: format!(", {code}") });
    }
    let pos = position_of(text, end);
    Some(TextEdit { range: Range::new(pos, pos), new_text: format!("  # noqa: {code}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, edit: &TextEdit) -> String {
        let (s, e) = (offset_of(text, edit.range.start), offset_of(text, edit.range.end));
        format!("{}{}{}", &text[..s], edit.new_text, &text[e..])
    }

    #[test]
    fn noqa_is_added_or_extended() {
        let text = "a = 1\nb = 2  # noqa: PG101\nc = 3  # noqa\nd = 4\r\n";
        assert_eq!(
            apply(text, &noqa_edit(text, 0, "PG301").unwrap()),
            text.replacen("a = 1", "a = 1  # noqa: PG301", 1)
        );
        assert_eq!(
            apply(text, &noqa_edit(text, 1, "PG301").unwrap()),
            text.replacen("# noqa: PG101", "# noqa: PG101, PG301", 1)
        );
        assert_eq!(noqa_edit(text, 2, "PG301"), None);
        assert_eq!(
            apply(text, &noqa_edit(text, 3, "PG301").unwrap()),
            text.replacen("d = 4", "d = 4  # noqa: PG301", 1)
        );
    }

    #[test]
    fn pg301_fix_on_the_function_holding_the_finding() {
        let text = "def forward(self, labels=None, logits_to_keep=0):\n    h = self.model()\n    keep = slice(-logits_to_keep, None)\n    if labels is not None:\n        loss = self.loss_function(hidden_states=h, labels=labels)\n    else:\n        logits = self.lm_head(h[:, keep, :])\n";
        let line = text.lines().position(|l| l.contains("loss_function")).unwrap() as u32;
        let (_, edits) =
            pg301_fix(text, Range::new(lsp_types::Position::new(line, 8), lsp_types::Position::new(line, 8))).unwrap();
        let mut fixed = text.to_string();
        for e in edits.iter().rev() {
            fixed = apply(&fixed, e);
        }
        assert!(fixed.contains("    keep = slice(-logits_to_keep, None)\n    h = h[:, keep, :]\n"), "{fixed}");
        assert!(fixed.contains("self.lm_head(h)"), "{fixed}");
    }
}
