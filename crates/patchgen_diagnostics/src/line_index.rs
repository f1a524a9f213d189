//! The one line index of the workspace: where each line of a text starts,
//! and the conversions every crate needs between a byte offset and a
//! position: patchgen's (1-based line, 1-based column counting
//! characters, as ruff and rustc print them) and the language server's
//! (0-based line, UTF-16 code units, LSP's default encoding).
//!
//! Lines break at `\n` only, as patchgen's locations count them: parsed
//! Python sources are decoded with universal newlines first (no `\r` is
//! left), and a file shown as read keeps its `\r\n`, whose `\r` belongs to
//! the line's ending, never to its text. A lone `\r` is text. This is why
//! the index is ours and not `ruff_source_file::LineIndex`, which also
//! breaks at a lone `\r`: on such a file the two would number lines
//! differently, and every location patchgen has written would move.
//!
//! A text ending in `\n` has an empty last line after it (the line its end
//! offset is on). Offsets are `u32`, as ruff's `TextSize` (texts up to
//! 4 GiB); out-of-range offsets and positions are clamped, never a panic.

/// Byte offsets where the lines of a text start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineIndex {
    /// 0 first, then one past each `\n`.
    starts: Vec<u32>,
}

impl LineIndex {
    /// The index of `text`.
    pub fn new(text: &str) -> LineIndex {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0u32);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| (i + 1) as u32));
        LineIndex { starts }
    }

    /// Where each line starts (0 first, then one past each `\n`).
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// The index as its vector of line starts.
    pub fn into_starts(self) -> Vec<u32> {
        self.starts
    }

    /// How many lines (one more than there are `\n`).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The 1-based line holding byte `offset` (past the end: the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = u32::try_from(offset).unwrap_or(u32::MAX);
        self.starts.partition_point(|&s| s <= offset)
    }

    /// Where 1-based `line` starts (`None` for line 0 or past the last line).
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.starts.get(line.checked_sub(1)?).map(|&s| s as usize)
    }

    /// Where 1-based `line` ends in `text`: before its `\n` (and the `\r`
    /// of a `\r\n`), or at the text's end.
    pub fn line_end(&self, text: &str, line: usize) -> Option<usize> {
        self.line_start(line)?;
        Some(match self.starts.get(line) {
            Some(&next) => {
                let nl = next as usize - 1;
                if nl > 0 && text.as_bytes().get(nl - 1) == Some(&b'\r') { nl - 1 } else { nl }
            }
            None => text.len(),
        })
    }

    /// The text of 1-based `line`, without its `\n` or `\r\n`.
    pub fn line_text<'t>(&self, text: &'t str, line: usize) -> Option<&'t str> {
        let start = self.line_start(line)?;
        let end = self.line_end(text, line)?;
        text.get(start..end.max(start))
    }

    /// `offset` moved back to a character boundary of `text`, at most its end.
    fn floor(text: &str, offset: usize) -> usize {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// 1-based (line, column) of byte `offset`; the column counts
    /// characters (inside a character: its start).
    pub fn line_column(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = Self::floor(text, offset);
        let line = self.line_of(offset);
        let start = self.starts[line - 1] as usize;
        (line, text[start..offset].chars().count() + 1)
    }

    /// The byte offset of 1-based `line` and 1-based character `column`
    /// (a column past the line's text: its end; `None` past the last line).
    pub fn offset_of(&self, text: &str, line: usize, column: usize) -> Option<usize> {
        let start = self.line_start(line)?;
        let content = self.line_text(text, line)?;
        let col = content.char_indices().nth(column.saturating_sub(1)).map_or(content.len(), |(i, _)| i);
        Some(start + col)
    }

    /// The LSP position of byte `offset`: 0-based line and UTF-16 column
    /// (inside a character: its start).
    pub fn utf16_position(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = Self::floor(text, offset);
        let line = self.line_of(offset);
        let start = self.starts[line - 1] as usize;
        let units: usize = text[start..offset].chars().map(char::len_utf16).sum();
        ((line - 1) as u32, units as u32)
    }

    /// The byte offset of an LSP position (0-based line, UTF-16 column): a
    /// column past the line's text is its end, a line past the last is the
    /// text's end, a column inside a character is past it.
    pub fn utf16_offset(&self, text: &str, line: u32, character: u32) -> usize {
        let line = line as usize + 1;
        let (Some(start), Some(content)) = (self.line_start(line), self.line_text(text, line)) else {
            return text.len();
        };
        let mut units = 0u32;
        for (i, c) in content.char_indices() {
            if units >= character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        start + content.len()
    }

    /// The UTF-16 length of the text of 0-based `line` (0 past the last).
    pub fn utf16_line_len(&self, text: &str, line: u32) -> u32 {
        self.line_text(text, line as usize + 1).map_or(0, |l| l.encode_utf16().count() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The lines as walking the text finds them: `split('\n')`, each
    /// followed by a `\n` without its final `\r` (the `\r` of a `\r\n`;
    /// a `\r` ending the text is text), with the byte where it starts.
    fn walked(text: &str) -> Vec<(usize, &str)> {
        let mut start = 0;
        let segments: Vec<&str> = text.split('\n').collect();
        let last = segments.len() - 1;
        segments
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                let here = start;
                start += l.len() + 1;
                (here, if i < last { l.strip_suffix('\r').unwrap_or(l) } else { l })
            })
            .collect()
    }

    fn texts() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof!["a", "\n", "\r", "\r\n", "é", "😀", " ", "\t", "字"], 0..40)
            .prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn agrees_with_walking_the_text(text in texts()) {
            let index = LineIndex::new(&text);
            let lines = walked(&text);
            prop_assert_eq!(index.line_count(), lines.len());
            for (i, &(start, content)) in lines.iter().enumerate() {
                prop_assert_eq!(index.line_start(i + 1), Some(start));
                prop_assert_eq!(index.line_text(&text, i + 1), Some(content));
                prop_assert_eq!(index.utf16_line_len(&text, i as u32), content.encode_utf16().count() as u32);
            }
            prop_assert_eq!(index.line_start(lines.len() + 1), None);
            prop_assert_eq!(index.line_start(0), None);
            for offset in 0..=text.len() + 2 {
                let clamped = offset.min(text.len());
                let floor = (0..=clamped).rev().find(|&o| text.is_char_boundary(o)).unwrap();
                let before = &text[..floor];
                let line = before.matches('\n').count();
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                let chars = before[line_start..].chars().count();
                let units: usize = before[line_start..].encode_utf16().count();
                prop_assert_eq!(index.line_of(floor), line + 1);
                prop_assert_eq!(index.line_column(&text, offset), (line + 1, chars + 1));
                prop_assert_eq!(index.utf16_position(&text, offset), (line as u32, units as u32));
                // Back again: the character's start.
                prop_assert_eq!(index.utf16_offset(&text, line as u32, units as u32), floor.min(line_start + lines[line].1.len()));
                prop_assert_eq!(index.offset_of(&text, line + 1, chars + 1), Some(floor.min(line_start + lines[line].1.len())));
            }
            // Past the end of the text or of a line: clamped.
            prop_assert_eq!(index.utf16_offset(&text, lines.len() as u32, 0), text.len());
            let last = lines.len() - 1;
            prop_assert_eq!(index.utf16_offset(&text, last as u32, u32::MAX), lines[last].0 + lines[last].1.len());
        }
    }

    #[test]
    fn crlf_and_lone_cr() {
        let text = "a\r\nb\rc\n";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 3);
        assert_eq!(index.line_text(text, 1), Some("a"));
        // A lone `\r` is text: `ruff_source_file` would start a line there.
        assert_eq!(index.line_text(text, 2), Some("b\rc"));
        assert_eq!(index.line_text(text, 3), Some(""));
        assert_eq!(index.line_end(text, 1), Some(1));
        let emoji = LineIndex::new("x😀y");
        assert_eq!(emoji.utf16_position("x😀y", 5), (0, 3));
        assert_eq!(emoji.utf16_offset("x😀y", 0, 2), 5);
    }
}
