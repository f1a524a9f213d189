//! Rendering [`Diagnostic`]s, the same way for every command:
//!
//! - text: `path:line:col: CODE message`, then the source line(s) with the
//!   range underlined (annotate-snippets, as ruff prints its full format)
//!   and a `= help:` line; colour only when asked (a terminal, no `NO_COLOR`);
//! - github: one workflow command per diagnostic,
//!   `::error file=…,line=…,col=…,title=CODE::message`, escaped as the
//!   runner requires (`%`, `\r`, `\n` in the message; also `:` and `,` in
//!   properties);
//! - json: the serde form of [`Diagnostic`] (schema in `docs/json.md`);
//! - sarif and gitlab: the code-scanning reports of the commands that
//!   report findings ([`sarif`], [`gitlab`], `docs/reports.md`).
//!
//! Source lines are read from the diagnostic's file when it is rendered; a
//! file that cannot be read is shown without an excerpt.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use annotate_snippets::{Annotation, AnnotationKind, Group, Level, Renderer, Snippet};

use super::{Diagnostic, LineIndex, Location, Severity};

pub mod fingerprint;
pub mod gitlab;
pub mod sarif;

pub use gitlab::gitlab;
pub use sarif::{RuleInfo, Tool, sarif};

/// Source texts read so far, by path.
#[derive(Default)]
pub struct Sources {
    files: HashMap<PathBuf, Option<Source>>,
}

impl Sources {
    fn get(&mut self, path: &Path) -> Option<&Source> {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| std::fs::read_to_string(path).ok().map(Source::new))
            .as_ref()
    }
}

/// A source text as read (`\r\n` kept) and its [`LineIndex`]: each
/// diagnostic looks its lines up instead of walking the text from the top.
struct Source {
    text: String,
    index: LineIndex,
}

impl Source {
    fn new(text: String) -> Source {
        let index = LineIndex::new(&text);
        Source { text, index }
    }

    /// Where 1-based `line` starts: the length of the lines before it
    /// (the text's end past its last line).
    fn line_start(&self, line: usize) -> usize {
        self.index.line_start(line).unwrap_or(self.text.len())
    }

    /// Where 0-based line `i` starts (the text's end past the last line).
    fn start(&self, i: usize) -> usize {
        self.line_start(i + 1)
    }

    /// `text.lines().nth(line - 1)`: the line without its `\n` or `\r\n`
    /// (no line starts at the end of a text ending in `\n`).
    fn line(&self, line: usize) -> Option<&str> {
        if self.index.line_start(line)? >= self.text.len() {
            return None;
        }
        self.index.line_text(&self.text, line)
    }

    /// The 0-based index of the line holding byte `at`; the text's end
    /// after a final `\n` belongs to the last line (no line starts there).
    fn line_index(&self, at: usize) -> usize {
        let lines = self.index.starts().partition_point(|&s| (s as usize) < self.text.len()).max(1);
        (self.index.line_of(at) - 1).min(lines - 1)
    }

    /// The lines a folded snippet of `range` shows, with margin, as a byte
    /// range, and the first one's 1-based number: from the line before
    /// `range`'s first (annotate-snippets numbers its gutter from the text
    /// before the range's end, and a text ending in `\n` counts one line
    /// less: that line keeps the count the whole file's) to two lines past
    /// its last, at most the text's end.
    fn excerpt(&self, range: &std::ops::Range<usize>) -> (std::ops::Range<usize>, usize) {
        let first = self.line_index(range.start).saturating_sub(1);
        let last = self.line_index(range.end);
        let end = self.start(last + 3);
        (self.start(first)..end, first + 1)
    }
}

/// Byte offset of 1-based (line, column) in `source`; column 0: the line's first
/// non-blank character.
fn offset(source: &Source, line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let start = source.line_start(line);
    let line_text = source.text[start..].split('\n').next()?;
    if column == 0 {
        return Some(start + (line_text.len() - line_text.trim_start().len()));
    }
    let col = line_text.char_indices().nth(column - 1).map_or(line_text.len(), |(i, _)| i);
    Some(start + col)
}

/// The byte range a location covers in `source`: its range, else from its
/// column (or the first non-blank character) to the end of the line's text.
fn span(source: &Source, loc: &Location) -> Option<std::ops::Range<usize>> {
    let start = offset(source, loc.line, loc.column)?;
    let end = match loc.end {
        Some((l, c)) if (l, c) > (loc.line, loc.column) => offset(source, l, c)?,
        _ => {
            let rest = source.text[start..].split('\n').next().unwrap_or("");
            start + rest.trim_end().len()
        }
    };
    Some(start..end.max(start))
}

/// The folded snippet of `source` with `range` annotated, built over the
/// lines it shows ([`Source::excerpt`]) so that rendering does not split
/// the whole file for each diagnostic; it renders as the whole file's
/// would (a test compares the two).
fn snippet<'a>(source: &'a Source, range: std::ops::Range<usize>, label: &'a str) -> Snippet<'a, Annotation<'a>> {
    let (lines, first_line) = source.excerpt(&range);
    Snippet::source(&source.text[lines.clone()])
        .line_start(first_line)
        .fold(true)
        .annotation(AnnotationKind::Primary.span(range.start - lines.start..range.end - lines.start).label(label))
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
            if let Some(source) = sources.get(&loc.path) {
                let line = source.line(loc.line).unwrap_or("");
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
        && let Some(source) = sources.get(&loc.path)
        && let Some(range) = span(source, loc)
    {
        group = group.element(snippet(source, range, d.severity.as_str()));
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
    use proptest::prelude::*;

    #[test]
    fn github_escapes_data_and_properties() {
        assert_eq!(github_escape_data("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d");
        assert_eq!(github_escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    /// Texts with every kind of line ending, blank lines, tabs and
    /// multi-byte characters.
    fn texts() -> impl Strategy<Value = String> {
        let atoms = prop_oneof![
            Just("\n"),
            Just("\r\n"),
            Just("\r"),
            Just(""),
            Just("    "),
            Just("\t"),
            Just("x = 1"),
            Just("def f(a, b):"),
            Just("çé€"),
            Just("# noqa: PG101"),
        ];
        prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        /// The line table answers as walking the text from the top does.
        #[test]
        fn line_table_matches_walking_the_text(text in texts(), line in 1usize..30, column in 0usize..12) {
            let source = Source::new(text.clone());
            prop_assert_eq!(source.line(line), text.lines().nth(line - 1));
            let walked = || -> Option<usize> {
                let start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
                let line_text = text[start..].split('\n').next()?;
                if column == 0 {
                    return Some(start + (line_text.len() - line_text.trim_start().len()));
                }
                Some(start + line_text.char_indices().nth(column - 1).map_or(line_text.len(), |(i, _)| i))
            };
            prop_assert_eq!(offset(&source, line, column), walked());
        }

        /// A snippet over the excerpt renders exactly as one over the whole
        /// text (annotate-snippets itself is the oracle), with and
        /// without colour, for one-line and multi-line ranges.
        #[test]
        fn excerpt_renders_as_the_whole_text(
            text in texts(),
            line in 1usize..30,
            column in 0usize..12,
            end in proptest::option::of((1usize..30, 0usize..12)),
            color in any::<bool>(),
        ) {
            let source = Source::new(text.clone());
            let loc = Location { path: "x.py".into(), line, column, end };
            if let Some(range) = span(&source, &loc) {
                let renderer = if color { Renderer::styled() } else { Renderer::plain() };
                let whole = Group::with_level(Level::ERROR)
                    .element(Snippet::source(&text).fold(true).annotation(AnnotationKind::Primary.span(range.clone()).label("error")));
                let excerpt = Group::with_level(Level::ERROR).element(snippet(&source, range, "error"));
                prop_assert_eq!(renderer.render(&[excerpt]), renderer.render(&[whole]));
            }
        }
    }

    #[test]
    fn offsets_count_characters() {
        let t = Source::new("ab\n  çd = 1\n".into());
        assert_eq!(offset(&t, 2, 0), Some(5));
        assert_eq!(offset(&t, 2, 4), Some(7));
        let loc = Location::line("x", 2);
        assert_eq!(span(&t, &loc), Some(5..12));
    }
}
