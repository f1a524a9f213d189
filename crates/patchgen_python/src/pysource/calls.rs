//! Finding a call's argument by where the call is: for errors about one
//! argument of a call known only by its location (the config's
//! `PatchConfig(...)`).

use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::ParsedFile;

/// The range of the argument of the call starting at `at` (1-based line and
/// character column) given as keyword `keyword=` (the whole keyword
/// argument) or as the `position`-th positional one; `None` when no call
/// starts there or it has no such argument.
pub fn call_argument_at(file: &ParsedFile, at: (usize, usize), keyword: &str, position: usize) -> Option<TextRange> {
    let (line, column) = at;
    if line == 0 || column == 0 || line > file.line_count() {
        return None;
    }
    let start = file.line_start(line);
    let rest = &file.text[start..];
    let chars = rest.char_indices().nth(column - 1).map_or(rest.len(), |(i, _)| i);
    let offset = TextSize::try_from(start + chars).ok()?;
    let mut finder = CallAt { offset, found: None };
    for stmt in file.body() {
        finder.visit_stmt(stmt);
        if finder.found.is_some() {
            break;
        }
    }
    let call = finder.found?;
    let arguments = &call.arguments;
    if let Some(kw) = arguments.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == keyword)) {
        return Some(kw.range());
    }
    arguments
        .args
        .get(position)
        .filter(|_| !arguments.args[..=position].iter().any(Expr::is_starred_expr))
        .map(Ranged::range)
}

struct CallAt<'a> {
    offset: TextSize,
    found: Option<&'a ExprCall>,
}

impl<'a> Visitor<'a> for CallAt<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found.is_none() && stmt.range().contains_inclusive(self.offset) {
            walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() || !expr.range().contains_inclusive(self.offset) {
            return;
        }
        if let Expr::Call(call) = expr
            && call.start() == self.offset
        {
            self.found = Some(call);
            return;
        }
        walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ParsedFile {
        ParsedFile::parse("c.py".into(), text).unwrap()
    }

    #[test]
    fn finds_the_keyword_or_the_positional_argument() {
        let f = file(
            "from patchgen import PatchConfig\n\nconfig = PatchConfig(\n    target_file=\"x.py\",\n    source_module=\"a.b\",\n)\n",
        );
        let r = call_argument_at(&f, (3, 10), "source_module", 0).unwrap();
        assert_eq!(&f.text[r], "source_module=\"a.b\"");
        let g = file("x = 1\nconfig = PatchConfig(\"a.b\", target_file=\"x.py\")\n");
        let r = call_argument_at(&g, (2, 10), "source_module", 0).unwrap();
        assert_eq!(&g.text[r], "\"a.b\"");
        // Nested in another expression; non-ASCII before the call.
        let h = file("y = [\"é\", f(PatchConfig(source_module=m))]\n");
        let col = "y = [\"é\", f(".chars().count() + 1;
        let r = call_argument_at(&h, (1, col), "source_module", 0).unwrap();
        assert_eq!(&h.text[r], "source_module=m");
    }

    #[test]
    fn nothing_where_no_call_starts_or_no_such_argument() {
        let f = file("config = PatchConfig(target_file=\"x.py\")\n");
        assert_eq!(call_argument_at(&f, (1, 10), "source_module", 0), None);
        assert_eq!(call_argument_at(&f, (1, 1), "source_module", 0), None);
        assert_eq!(call_argument_at(&f, (9, 1), "source_module", 0), None);
        let g = file("config = PatchConfig(*args)\n");
        assert_eq!(call_argument_at(&g, (1, 10), "source_module", 0), None);
    }
}
