//! `# noqa` on a config line, as ruff reads it: `# noqa` alone suppresses
//! every code on the line; `# noqa: PG101, PG203` (commas or spaces between
//! codes, case-insensitive `noqa`) only those. Other codes in the list (ruff's
//! `F821`) are allowed and ignored here, so one comment can serve both tools.

/// What a line's `noqa` comment suppresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Noqa {
    All,
    Codes(Vec<String>),
}

impl Noqa {
    pub fn suppresses(&self, code: &str) -> bool {
        match self {
            Noqa::All => true,
            Noqa::Codes(codes) => codes.iter().any(|c| c.eq_ignore_ascii_case(code)),
        }
    }
}

/// The `noqa` directive in `line`, if any (the first `#` … `noqa` found
/// after a `#`; string contents are not told apart from comments, as in
/// ruff's line-based scan).
pub fn parse(line: &str) -> Option<Noqa> {
    let mut rest = line;
    while let Some(hash) = rest.find('#') {
        let after = rest[hash + 1..].trim_start();
        // Bytes: a comment may start with a non-ASCII character.
        if after.len() >= 4 && after.as_bytes()[..4].eq_ignore_ascii_case(b"noqa") {
            let tail = &after[4..];
            let Some(list) = tail.strip_prefix(':') else {
                // `# noqa` followed by nothing or by a space and text.
                if tail.is_empty() || tail.starts_with(char::is_whitespace) {
                    return Some(Noqa::All);
                }
                rest = &rest[hash + 1..];
                continue;
            };
            let codes: Vec<String> = list
                .split(|c: char| c == ',' || c.is_whitespace())
                .map(str::trim)
                .take_while(|c| c.is_empty() || is_code(c))
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            return Some(if codes.is_empty() { Noqa::All } else { Noqa::Codes(codes) });
        }
        rest = &rest[hash + 1..];
    }
    None
}

/// What makes `line` (without its line break) suppress `code`, as ruff's
/// `--add-noqa` writes it: `(byte offset in line, text to insert)` —
/// `, CODE` after an existing `# noqa: A, B` list, else `  # noqa: CODE`
/// at the end of the line; `None` when the line already suppresses `code`.
pub fn addition(line: &str, code: &str) -> Option<(usize, String)> {
    if let Some(noqa) = parse(line) {
        if noqa.suppresses(code) {
            return None;
        }
        // `# noqa: A, B` → `# noqa: A, B, code` (the list runs to the line's end or the first non-code word).
        let list_start = line.to_ascii_lowercase().find("noqa:")? + "noqa:".len();
        let list = &line[list_start..];
        let list_len = list
            .split_inclusive([',', ' '])
            .take_while(|w| {
                let w = w.trim_matches([',', ' ']);
                w.is_empty() || is_code(w)
            })
            .map(str::len)
            .sum::<usize>();
        let at = list_start + list[..list_len].trim_end_matches([',', ' ']).len();
        return Some((at, format!(", {code}")));
    }
    Some((line.len(), format!("  # noqa: {code}")))
}

/// A rule code as ruff writes them: letters then digits (`PG101`, `F821`).
fn is_code(c: &str) -> bool {
    let letters = c.chars().take_while(|ch| ch.is_ascii_alphabetic()).count();
    letters > 0 && c.len() > letters && c[letters..].chars().all(|ch| ch.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse("x = 1"), None);
        assert_eq!(parse("x = 1  # noqa"), Some(Noqa::All));
        assert_eq!(parse("x = 1  # NOQA"), Some(Noqa::All));
        assert_eq!(parse("x  # noqa: PG101"), Some(Noqa::Codes(vec!["PG101".into()])));
        assert_eq!(parse("x  # noqa: PG101, F821 why"), Some(Noqa::Codes(vec!["PG101".into(), "F821".into()])));
        assert_eq!(parse("x  # noqa:PG101,PG203"), Some(Noqa::Codes(vec!["PG101".into(), "PG203".into()])));
        assert_eq!(parse("x  # noqa-ish"), None);
        assert!(parse("x  # type: ignore  # noqa: PG2").unwrap().suppresses("pg2"));
        // A comment starting with a non-ASCII character is no noqa, and no panic.
        assert_eq!(parse("x  # é𝔘"), None);
        assert_eq!(parse("x  # é𝔘  # noqa: PG101"), Some(Noqa::Codes(vec!["PG101".into()])));
    }

    #[test]
    fn additions_make_the_line_suppress_the_code() {
        let add = |line: &str, code: &str| {
            addition(line, code).map(|(at, text)| format!("{}{text}{}", &line[..at], &line[at..]))
        };
        assert_eq!(add("a = 1", "PG301").unwrap(), "a = 1  # noqa: PG301");
        assert_eq!(add("b = 2  # noqa: PG101", "PG301").unwrap(), "b = 2  # noqa: PG101, PG301");
        assert_eq!(add("b = 2  # noqa: PG101, F821 why", "PG3").unwrap(), "b = 2  # noqa: PG101, F821, PG3 why");
        assert_eq!(add("c = 3  # noqa", "PG301"), None);
        assert_eq!(add("c = 3  # noqa: pg301", "PG301"), None);
        for line in ["a = 1", "b  # noqa: PG101", "x  # é  # noqa: F821 why"] {
            assert!(parse(&add(line, "PG999").unwrap()).unwrap().suppresses("PG999"), "{line}");
        }
    }
}
