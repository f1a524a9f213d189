//! Positions in a buffer as LSP counts them and as patchgen does: LSP
//! positions are 0-based lines and UTF-16 code units (the protocol's
//! default encoding); patchgen's locations are 1-based lines and 1-based
//! columns counting characters (`patchgen_diagnostics`), byte offsets
//! inside the program. Lines break at `\n`; a `\r` before it is not part of
//! the line (`patchgen_diagnostics::LineIndex`, the workspace's one line
//! index). Out-of-range positions are clamped, never a panic.

use lsp_types::{Position, Range};
use patchgen_diagnostics::{LineIndex, Location};

/// The byte offset of an LSP position (a character past the line's end is
/// its end; a line past the text's end is the end of the text).
pub fn offset_of(text: &str, pos: Position) -> usize {
    LineIndex::new(text).utf16_offset(text, pos.line, pos.character)
}

/// The LSP position of a byte offset (inside a character: its start).
pub fn position_of(text: &str, offset: usize) -> Position {
    let (line, character) = LineIndex::new(text).utf16_position(text, offset);
    Position { line, character }
}

/// The UTF-16 column of 1-based character column `column` on 0-based `line`.
fn utf16_column(index: &LineIndex, text: &str, line: usize, column: usize) -> u32 {
    let Some(l) = index.line_text(text, line + 1) else { return 0 };
    l.chars().take(column.saturating_sub(1)).map(|c| c.len_utf16() as u32).sum()
}

/// A patchgen location in `text` (the file it names, as the buffer holds
/// it) as an LSP range: a range as given; a point up to the line's end; a
/// whole line (`column == 0`) from its first non-blank character; the
/// whole file (`line == 0`) as the start of its first line.
pub fn range_of(text: &str, loc: &Location) -> Range {
    if loc.line == 0 {
        return Range::default();
    }
    let index = LineIndex::new(text);
    let line = loc.line - 1;
    let line_len = |line: usize| index.utf16_line_len(text, line as u32);
    if loc.column == 0 {
        let indent = index
            .line_text(text, line + 1)
            .map_or(0, |l| l.chars().take_while(|c| c.is_whitespace()).map(char::len_utf16).sum::<usize>());
        let end = line_len(line);
        return Range::new(Position::new(line as u32, (indent as u32).min(end)), Position::new(line as u32, end));
    }
    let start = Position::new(line as u32, utf16_column(&index, text, line, loc.column));
    let end = match loc.end {
        Some((l, c)) if l >= loc.line => {
            let end = Position::new((l - 1) as u32, utf16_column(&index, text, l - 1, c));
            if end > start { end } else { start }
        }
        _ => Position::new(line as u32, line_len(line).max(start.character)),
    };
    Range::new(start, end)
}

/// `text` with one LSP content change applied: a range replaced, or the
/// whole text when there is no range.
pub fn apply_change(text: &mut String, range: Option<Range>, new_text: &str) {
    match range {
        None => *text = new_text.to_string(),
        Some(r) => {
            let start = offset_of(text, r.start);
            let end = offset_of(text, r.end).max(start);
            text.replace_range(start..end, new_text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_positions_round_trip_over_non_ascii() {
        // `é` is one UTF-16 unit (2 bytes), `𝔘` two units (4 bytes).
        let text = "x = 1\ns = \"é𝔘\"  # ok\r\ny\n";
        let pos = Position::new(1, 8); // after `𝔘`
        let off = offset_of(text, pos);
        assert_eq!(&text[off..off + 1], "\"");
        assert_eq!(position_of(text, off), pos);
        assert_eq!(offset_of(text, Position::new(1, 99)), text.find("\r\n").unwrap());
        assert_eq!(offset_of(text, Position::new(9, 0)), text.len());
        // Inside a character: its start.
        assert_eq!(position_of(text, text.find('é').unwrap() + 1), Position::new(1, 5));
    }

    #[test]
    fn locations_become_utf16_ranges() {
        let text = "a\n  s = \"é𝔘\" + bad\n";
        // `bad` is at character column 14 (1-based), UTF-16 column 14 (0-based: `𝔘` is two units).
        let loc = Location::range("f.py", (2, 14), (2, 17));
        assert_eq!(range_of(text, &loc), Range::new(Position::new(1, 14), Position::new(1, 17)));
        let line = Location::line("f.py", 2);
        assert_eq!(range_of(text, &line), Range::new(Position::new(1, 2), Position::new(1, 17)));
        assert_eq!(range_of(text, &Location::file("f.py")), Range::default());
        // A point runs to the end of its line.
        let point = Location::point("f.py", 2, 3);
        assert_eq!(range_of(text, &point), Range::new(Position::new(1, 2), Position::new(1, 17)));
    }

    #[test]
    fn changes_apply_at_utf16_positions() {
        let mut text = "é = 1\nx = 2\n".to_string();
        apply_change(&mut text, Some(Range::new(Position::new(0, 4), Position::new(0, 5))), "3");
        assert_eq!(text, "é = 3\nx = 2\n");
        apply_change(&mut text, None, "new");
        assert_eq!(text, "new");
    }
}
