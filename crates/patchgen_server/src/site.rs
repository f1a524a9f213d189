//! What the cursor is on in a config buffer, read lexically so that it
//! works while the buffer does not parse (the user is typing): a patch
//! target string (the first argument of a DSL registration:
//! `replace_class`, `override_method`, `replace_function`, `modify_init`,
//! `add_helper_after`), an `add_import` module or name, a code in a
//! `# noqa` comment, or the name of a function defined at the top level.
//! Byte offsets throughout; strings are single-line `'…'` / `"…"` (targets
//! are dotted names), and one left open at the end of a line is taken as
//! running to it (completion while typing).

use patchgen_config::PatchType;

/// What the cursor is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Site {
    /// A patch target string: its text and the byte range of that text
    /// (inside the quotes); `prefix` is the text before the cursor.
    Target { text: String, range: (usize, usize), prefix: String },
    /// The module string of `config.add_import("module", ...)`.
    ImportModule { module: String },
    /// A name string of `config.add_import("module", names=[...])`.
    ImportName { module: String, name: String },
    /// A rule code in a `# noqa: ...` comment.
    NoqaCode { code: String },
    /// The name of a top-level `def` or `class` (the line of its keyword, 1-based).
    Definition { line: usize },
}

/// The DSL methods whose first argument is a patch target.
pub fn target_methods() -> Vec<&'static str> {
    let mut out: Vec<&'static str> =
        PatchType::ALL.iter().filter(|t| **t != PatchType::AdditionalImport).map(|t| t.dsl_method()).collect();
    out.push("add_helper_after");
    out
}

/// The DSL method that registers imports.
const ADD_IMPORT: &str = "add_import";

/// How far back the enclosing call is looked for.
const WINDOW: usize = 4000;

/// What is at byte `offset` of `text`.
pub fn site_at(text: &str, offset: usize) -> Option<Site> {
    let offset = floor_boundary(text, offset);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[line_start..line_end];
    let col = offset - line_start;
    if let Some(code) = noqa_code_at(line, col) {
        return Some(Site::NoqaCode { code });
    }
    if let Some((open, close)) = string_at(line, col) {
        let (open, close) = (line_start + open, line_start + close);
        return string_site(text, open, close, offset);
    }
    definition_name_at(line, col).map(|_| Site::Definition { line: text[..line_start].matches('\n').count() + 1 })
}

fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The string literal of `line` around column `col`: the byte offsets of
/// its opening quote and of its closing quote (the line's end when open).
/// A cursor right after the closing quote is not in it.
fn string_at(line: &str, col: usize) -> Option<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => return None,
            q @ (b'"' | b'\'') => {
                let open = i;
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != q {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let close = j.min(bytes.len());
                if open < col && col <= close {
                    return Some((open, close));
                }
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// What the string whose quotes are at `open`/`close` (offsets in `text`)
/// is an argument of.
fn string_site(text: &str, open: usize, close: usize, cursor: usize) -> Option<Site> {
    let content = &text[open + 1..close];
    let (callee, paren) = enclosing_call(text, open)?;
    let args_before = &text[paren + 1..open];
    if target_methods().contains(&callee.as_str()) {
        // The first argument, positional or by its keyword.
        // Positional: nothing before it; by keyword: `target…=` right before it.
        let before = args_before.trim();
        let keyword = before.strip_suffix('=').map(|k| k.rsplit(',').next().unwrap_or(k).trim());
        let first = before.is_empty() || keyword.is_some_and(|k| k.starts_with("target"));
        return first.then(|| Site::Target {
            text: content.to_string(),
            range: (open + 1, close),
            prefix: text[open + 1..cursor.max(open + 1)].to_string(),
        });
    }
    if callee == ADD_IMPORT {
        let module = first_string(&text[paren + 1..])?;
        if args_before.trim().is_empty() || args_before.trim().trim_end_matches('=').trim() == "module" {
            return Some(Site::ImportModule { module: content.to_string() });
        }
        return Some(Site::ImportName { module, name: content.to_string() });
    }
    None
}

/// The call whose parentheses hold `at`: the callee's last name and the
/// offset of its `(`. Brackets of lists inside the call are stepped over.
fn enclosing_call(text: &str, at: usize) -> Option<(String, usize)> {
    let from = floor_boundary(text, at.saturating_sub(WINDOW));
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = at;
    while i > from {
        i -= 1;
        match bytes[i] {
            b')' | b']' | b'}' => depth += 1,
            b'(' | b'[' | b'{' if depth > 0 => depth -= 1,
            b'(' => {
                let before = text[..i].trim_end();
                let name_start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
                let name = &before[name_start..];
                return (!name.is_empty()).then(|| (name.to_string(), i));
            }
            b'[' | b'{' => {}
            _ => {}
        }
    }
    None
}

/// The contents of the first string literal of `text`, if it comes before
/// any other argument.
fn first_string(text: &str) -> Option<String> {
    let t = text.trim_start();
    let t = t.strip_prefix("module").map(|r| r.trim_start().trim_start_matches('=').trim_start()).unwrap_or(t);
    let q = t.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let end = t[1..].find(q)?;
    Some(t[1..1 + end].to_string())
}

/// The rule code under column `col` of a line with a `# noqa: ...` comment.
fn noqa_code_at(line: &str, col: usize) -> Option<String> {
    let hash = line.find('#')?;
    let lower = line[hash..].to_ascii_lowercase();
    let noqa = hash + lower.find("noqa")?;
    if col <= noqa + 4 {
        return None;
    }
    let is_code_char = |c: char| c.is_ascii_alphanumeric();
    let start = line[..col].rfind(|c: char| !is_code_char(c)).map_or(0, |p| p + 1);
    let end = line[col..].find(|c: char| !is_code_char(c)).map_or(line.len(), |p| col + p);
    let word = &line[start..end];
    let letters = word.chars().take_while(char::is_ascii_alphabetic).count();
    (letters > 0 && word.len() > letters && word[letters..].chars().all(|c| c.is_ascii_digit()))
        .then(|| word.to_ascii_uppercase())
}

/// The name of a top-level `def name` / `async def name` / `class name`
/// under column `col`.
fn definition_name_at(line: &str, col: usize) -> Option<&str> {
    let rest = line.strip_prefix("async ").unwrap_or(line);
    let keyword_len = if rest.starts_with("def ") {
        4
    } else if rest.starts_with("class ") {
        6
    } else {
        return None;
    };
    let name_start = line.len() - rest.len() + keyword_len;
    let name_len = line[name_start..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(line.len());
    let name_end = name_start + name_len;
    (name_start <= col && col <= name_end && name_len > 0).then(|| &line[name_start..name_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, marker: &str) -> Option<Site> {
        let offset = text.find(marker).expect("marker") + marker.len();
        site_at(&text.replace('|', ""), offset - 1)
    }

    #[test]
    fn target_strings_of_every_registration() {
        let t = "@config.override_method(\"Qwen3MLP.fo|rward\", description=\"x\")\n";
        assert_eq!(
            at(t, "|"),
            Some(Site::Target { text: "Qwen3MLP.forward".into(), range: (25, 41), prefix: "Qwen3MLP.fo".into() })
        );
        let t = "config.replace_class(\n    target_class='Qwen3M|LP',\n)\n";
        assert!(matches!(at(t, "|"), Some(Site::Target { text, .. }) if text == "Qwen3MLP"));
        let t = "config.override_method(description=\"é\", target_method=\"Qwen3M|LP\", replacement=f)\n";
        assert!(matches!(at(t, "|"), Some(Site::Target { text, .. }) if text == "Qwen3MLP"));
        // Completion while typing: the string is still open.
        let t = "@config.replace_function(\"apply_ro|";
        assert!(matches!(at(t, "|"), Some(Site::Target { prefix, .. }) if prefix == "apply_ro"));
        // The description is no target.
        let t = "@config.override_method(\"A.f\", description=\"Qwen|\")\n";
        assert_eq!(at(t, "|"), None);
    }

    #[test]
    fn import_modules_and_names() {
        let t = "config.add_import(\"transformers.activations\", names=[\"ACT2FN\", \"Get|ACT\"])\n";
        assert_eq!(
            at(t, "|"),
            Some(Site::ImportName { module: "transformers.activations".into(), name: "GetACT".into() })
        );
        let t = "config.add_import(\"transformers.acti|vations\", names=[\"ACT2FN\"])\n";
        assert_eq!(at(t, "|"), Some(Site::ImportModule { module: "transformers.activations".into() }));
    }

    #[test]
    fn noqa_codes_and_definitions() {
        let t = "@config.override_method(\"A.f\")  # noqa: PG1|01, PG203\n";
        assert_eq!(at(t, "|"), Some(Site::NoqaCode { code: "PG101".into() }));
        let t = "x = 1\ndef qwen3_for|ward(self):\n    pass\n";
        assert_eq!(at(t, "|"), Some(Site::Definition { line: 2 }));
        assert_eq!(at("x = 1  # a comment wi|th PG101\n", "|"), None);
    }
}
