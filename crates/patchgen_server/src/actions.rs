//! Code actions for published diagnostics, as workspace edits: the fix
//! lint attached to the finding (carried in the diagnostic's `data`,
//! computed on the buffers as they were checked; safe fixes are the
//! preferred action, unsafe ones say so in their title) and `# noqa: CODE`
//! on the finding's line for any lint rule (added to an existing `# noqa:`
//! list).

use std::collections::HashMap;

use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, NumberOrString, Range, TextEdit, Url, WorkspaceEdit,
};

use crate::text::{offset_of, position_of};
use patchgen_lint::fix::{Applicability, Fix};

/// The actions for `diagnostics` of the buffer `text` at `uri`.
pub fn for_diagnostics(uri: &Url, text: &str, diagnostics: &[&Diagnostic]) -> Vec<CodeActionOrCommand> {
    let mut out = Vec::new();
    for d in diagnostics {
        let Some(NumberOrString::String(code)) = &d.code else { continue };
        if let Some((title, changes, preferred)) = lint_fix(uri, text, d) {
            out.push(action(title, d, changes, preferred));
        }
        if patchgen_lint::rule(code).is_some_and(|r| r.code == code)
            && let Some(edit) = noqa_edit(text, d.range.start.line as usize, code)
        {
            let changes = HashMap::from([(uri.clone(), vec![edit])]);
            out.push(action(format!("Suppress {code} on this line (`# noqa: {code}`)"), d, changes, false));
        }
    }
    out
}

fn action(title: String, d: &Diagnostic, changes: HashMap<Url, Vec<TextEdit>>, preferred: bool) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![(*d).clone()]),
        edit: Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }),
        is_preferred: Some(preferred),
        ..CodeAction::default()
    })
}

/// The fix lint attached to `d` (its `data.fix`) as edits of the buffer
/// `text` at `uri` and of other files as they are on disk: the title, the
/// edits by document, whether it is safe. `None` when `d` has none.
pub fn lint_fix(uri: &Url, text: &str, d: &Diagnostic) -> Option<(String, HashMap<Url, Vec<TextEdit>>, bool)> {
    let fix: Fix = serde_json::from_value(d.data.as_ref()?.get("fix")?.clone()).ok()?;
    if fix.applicability == Applicability::DisplayOnly {
        return None;
    }
    let mut changes: HashMap<Url, Vec<TextEdit>> = HashMap::new();
    for e in &fix.edits {
        let file_uri = Url::from_file_path(&e.path).ok()?;
        let on_disk;
        let file_text = if &file_uri == uri {
            text
        } else {
            on_disk = std::fs::read_to_string(&e.path).ok()?;
            on_disk.as_str()
        };
        let start = patchgen_diagnostics::fix::offset(file_text, e.start)?;
        let end = patchgen_diagnostics::fix::offset(file_text, e.end)?;
        let range = Range::new(position_of(file_text, start), position_of(file_text, end));
        changes.entry(file_uri).or_default().push(TextEdit { range, new_text: e.content.clone() });
    }
    let safe = fix.applicability == Applicability::Safe;
    let title = if safe { fix.message } else { format!("{} (unsafe fix)", fix.message) };
    Some((title, changes, safe))
}

/// `# noqa: code` on 0-based `line`: appended to the line's `# noqa:`
/// list, or a new comment at its end; `None` when the line already
/// suppresses `code`.
pub fn noqa_edit(text: &str, line: usize, code: &str) -> Option<TextEdit> {
    let start = offset_of(text, lsp_types::Position::new(line as u32, 0));
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let content = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
    let (at, new_text) = patchgen_lint::noqa::addition(content, code)?;
    let pos = position_of(text, start + at);
    Some(TextEdit { range: Range::new(pos, pos), new_text })
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
    fn a_lint_fix_becomes_edits_in_utf16_positions() {
        let text = "x = \"é\"; y = old\n";
        let path = std::env::temp_dir().join("patchgen-actions-test.py");
        let uri = Url::from_file_path(&path).unwrap();
        let fix = patchgen_lint::fix::Fix {
            applicability: Applicability::Unsafe,
            message: "Rename".into(),
            edits: vec![patchgen_lint::fix::Edit {
                path: path.clone(),
                start: patchgen_lint::fix::Position { line: 1, column: 14 },
                end: patchgen_lint::fix::Position { line: 1, column: 17 },
                content: "new".into(),
            }],
        };
        let d = Diagnostic {
            data: Some(serde_json::json!({ "name": "n", "fix": fix })),
            code: Some(NumberOrString::String("PG106".into())),
            ..Diagnostic::default()
        };
        let (title, changes, preferred) = lint_fix(&uri, text, &d).unwrap();
        assert_eq!((title.as_str(), preferred), ("Rename (unsafe fix)", false));
        let edits = &changes[&uri];
        assert_eq!(apply(text, &edits[0]), "x = \"é\"; y = new\n");
        assert_eq!(edits[0].range.start.character, 13);
        // No fix in the data: no action.
        let bare = Diagnostic { data: Some(serde_json::json!({ "name": "n", "fix": null })), ..d };
        assert!(lint_fix(&uri, text, &bare).is_none());
    }
}
