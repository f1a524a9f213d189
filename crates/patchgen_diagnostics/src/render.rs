//! Rendering [`Diagnostic`]s, the same way for every command:
//!
//! - text: `path:line:col: CODE message`, then the source line(s) with the
//!   range underlined (annotate-snippets, as ruff prints its full format)
//!   and a `= help:` line; colour only when asked (a terminal, no `NO_COLOR`);
//! - github: one workflow command per diagnostic,
//!   `::error file=…,line=…,col=…,title=CODE::message`, escaped as the
//!   runner requires (`%`, `\r`, `\n` in the message; also `:` and `,` in
//!   properties);
//! - json: the serde form of [`Diagnostic`] (schema in `docs/json.md`).
//!
//! Source lines are read from the diagnostic's file when it is rendered; a
//! file that cannot be read is shown without an excerpt.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use super::{Diagnostic, Location, Severity};

/// Source texts read so far, by path.
#[derive(Default)]
pub struct Sources {
    files: HashMap<PathBuf, Option<String>>,
}

impl Sources {
    fn get(&mut self, path: &Path) -> Option<&str> {
        self.files.entry(path.to_path_buf()).or_insert_with(|| std::fs::read_to_string(path).ok()).as_deref()
    }
}

/// Byte offset of 1-based (line, column) in `text`; column 0: the line's first
/// non-blank character.
fn offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start: usize = text.split_inclusive('\n').take(line.checked_sub(1)?).map(str::len).sum();
    let line_text = text[start..].split('\n').next()?;
    if column == 0 {
        return Some(start + (line_text.len() - line_text.trim_start().len()));
    }
    let col = line_text.char_indices().nth(column - 1).map_or(line_text.len(), |(i, _)| i);
    Some(start + col)
}

/// The byte range a location covers in `text`: its range, else from its
/// column (or the first non-blank character) to the end of the line's text.
fn span(text: &str, loc: &Location) -> Option<std::ops::Range<usize>> {
    let start = offset(text, loc.line, loc.column)?;
    let end = match loc.end {
        Some((l, c)) if (l, c) > (loc.line, loc.column) => offset(text, l, c)?,
        _ => {
            let rest = text[start..].split('\n').next().unwrap_or("");
            start + rest.trim_end().len()
        }
    };
    Some(start..end.max(start))
}

/// `path` relative to `base` when it lies under it.
fn shown(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}

/// One diagnostic as text, ending in a newline; paths under `base` are
/// shown relative to it.
pub fn text(d: &Diagnostic, sources: &mut Sources, color: bool, base: &Path) -> String {
    let paint = |code: &str, s: &str| if color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() };
    let severity_colour = match d.severity {
        Severity::Error => "31;1",
        Severity::Warning => "33;1",
        Severity::Info => "36;1",
    };
    let mut out = String::new();
    if let Some(loc) = &d.location {
        let mut header = Location { path: shown(&loc.path, base), ..loc.clone() };
        if header.line > 0 && header.column == 0 {
            // The whole line: point at its first non-blank character.
            if let Some(text) = sources.get(&loc.path) {
                let line = text.lines().nth(loc.line - 1).unwrap_or("");
                header.column = line.chars().take_while(|c| c.is_whitespace()).count() + 1;
            }
        }
        out.push_str(&paint("1", &header.to_string()));
        out.push_str(": ");
    }
    out.push_str(&paint(severity_colour, &d.code));
    out.push(' ');
    out.push_str(&d.message);
    if let Some(config) = d.config.as_ref().filter(|c| d.location.is_none() || !d.message.contains(c.as_str())) {
        out.push_str(&paint("2", &format!(" [{config}]")));
    }
    out.push('\n');
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::NOTE,
    };
    let mut group = Group::with_level(level.clone());
    let mut any = false;
    if let Some(loc) = d.location.as_ref().filter(|l| l.line > 0)
        && let Some(text) = sources.get(&loc.path)
        && let Some(range) = span(text, loc)
    {
        group = group.element(
            Snippet::source(text).fold(true).annotation(AnnotationKind::Primary.span(range).label(d.severity.as_str())),
        );
        any = true;
    }
    for r in &d.related {
        let at = Location { path: shown(&r.location.path, base), ..r.location.clone() };
        out.push_str(&format!("  {} {at}: {}\n", paint("2", "-->"), r.message));
    }
    if let Some(help) = &d.help {
        group = group.element(Level::HELP.message(help.as_str()));
        any = true;
    }
    if any {
        let renderer = if color { Renderer::styled() } else { Renderer::plain() };
        out.push_str(&renderer.render(&[group]));
        out.push('\n');
    }
    out
}

/// Escape workflow-command data (the message).
pub fn github_escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escape a workflow-command property value.
pub fn github_escape_property(s: &str) -> String {
    github_escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One diagnostic as a GitHub Actions workflow command, ending in a newline.
/// Paths are made relative to `base` when they lie under it (the runner
/// expects paths from the repository root).
pub fn github(d: &Diagnostic, base: &Path) -> String {
    let command = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let mut props = Vec::new();
    if let Some(loc) = &d.location {
        props.push(format!("file={}", github_escape_property(&shown(&loc.path, base).to_string_lossy())));
        if loc.line > 0 {
            props.push(format!("line={}", loc.line));
            if loc.column > 0 {
                props.push(format!("col={}", loc.column));
            }
            if let Some((l, c)) = loc.end {
                props.push(format!("endLine={l}"));
                if l == loc.line && c > 0 {
                    props.push(format!("endColumn={c}"));
                }
            }
        }
    }
    props.push(format!("title={}", github_escape_property(&format!("{} {}", d.code, d.name))));
    let mut message = d.message.clone();
    if let Some(config) = &d.config {
        message.push_str(&format!(" [{config}]"));
    }
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    format!("::{command} {}::{}\n", props.join(","), github_escape_data(&message))
}

/// The JSON document's version: bumped only on an incompatible change.
pub const JSON_VERSION: u32 = 1;

/// The one JSON document every command writes (`docs/json.md`):
/// `{"version": 1, "command": …, "diagnostics": [...], …fields}`, pretty,
/// ending in a newline.
pub fn json_document(
    command: &str,
    diagnostics: &[&Diagnostic],
    fields: serde_json::Map<String, serde_json::Value>,
) -> String {
    #[derive(serde::Serialize)]
    struct Document<'a> {
        version: u32,
        command: &'a str,
        diagnostics: &'a [&'a Diagnostic],
        #[serde(flatten)]
        fields: serde_json::Map<String, serde_json::Value>,
    }
    let doc = Document { version: JSON_VERSION, command, diagnostics, fields };
    // Maps with string keys and plain values always serialise.
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The `serde_json` object of a serialisable value (a report's JSON fields).
pub fn json_fields(value: &impl serde::Serialize) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_escapes_data_and_properties() {
        assert_eq!(github_escape_data("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d");
        assert_eq!(github_escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn offsets_count_characters() {
        let t = "ab\n  çd = 1\n";
        assert_eq!(offset(t, 2, 0), Some(5));
        assert_eq!(offset(t, 2, 4), Some(7));
        let loc = Location::line("x", 2);
        assert_eq!(span(t, &loc), Some(5..12));
    }
}
