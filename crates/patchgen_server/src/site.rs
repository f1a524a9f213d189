//! What the cursor is on in a config buffer, read from the syntax tree
//! ruff's parser recovers, so that it works while the buffer does not
//! parse (the user is typing): a patch target string (the first argument
//! of a DSL registration: `replace_class`, `override_method`,
//! `replace_function`, `modify_init`, `add_helper_after`), an `add_import`
//! module or name, a code in a `# noqa` comment (the comment tokens), or
//! the name of a function or class defined at the top level. Byte offsets
//! throughout; a string left open at the end of a line runs to it (the
//! parser's recovery; completion while typing).

use patchgen_config::PatchType;
use ruff_python_ast::token::TokenKind;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{ArgOrKeyword, Expr, ExprCall, PySourceType, Stmt, StringLiteral};
use ruff_text_size::{Ranged, TextSize};

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

/// What is at byte `offset` of `text`.
pub fn site_at(text: &str, offset: usize) -> Option<Site> {
    let offset = floor_boundary(text, offset);
    let at = TextSize::try_from(offset).ok()?;
    let parsed = ruff_python_parser::parse_unchecked_source(text, PySourceType::Python);
    let comment = parsed.tokens().iter().find(|t| t.kind() == TokenKind::Comment && t.range().contains_inclusive(at));
    if let Some(comment) = comment {
        let start = usize::from(comment.start());
        return noqa_code_at(&text[start..usize::from(comment.end())], offset - start)
            .map(|code| Site::NoqaCode { code });
    }
    let mut finder = StringFinder { text, at, found: None };
    finder.visit_body(&parsed.syntax().body);
    if let Some(found) = finder.found {
        return found;
    }
    definition_at(&parsed.syntax().body, text, at)
}

fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The innermost call with a string argument (or a string in a list,
/// tuple or set argument) under the cursor, and the site that string is.
struct StringFinder<'t> {
    text: &'t str,
    at: TextSize,
    /// The string under the cursor was found (as an argument of a call).
    found: Option<Option<Site>>,
}

impl<'a> Visitor<'a> for StringFinder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found.is_none() && stmt.range().contains_inclusive(self.at) {
            visitor::walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() || !expr.range().contains_inclusive(self.at) {
            return;
        }
        if let Expr::Call(call) = expr
            && let Some(arg) = self.argument_at(call)
        {
            self.found = Some(call_site(self.text, self.at, call, arg));
            return;
        }
        visitor::walk_expr(self, expr);
    }
}

/// Where the string under the cursor is among a call's arguments.
#[derive(Clone, Copy)]
struct Argument<'a> {
    /// Its index among the arguments, in source order (`None` inside a
    /// list, tuple or set argument).
    index: Option<usize>,
    /// The keyword it is passed by.
    keyword: Option<&'a str>,
    string: &'a StringLiteral,
}

impl StringFinder<'_> {
    fn argument_at<'a>(&self, call: &'a ExprCall) -> Option<Argument<'a>> {
        call.arguments.iter_source_order().enumerate().find_map(|(index, arg)| {
            let (keyword, value) = match arg {
                ArgOrKeyword::Arg(value) => (None, value),
                ArgOrKeyword::Keyword(k) => (Some(k.arg.as_ref().map_or("", |a| a.as_str())), &k.value),
            };
            if let Some(string) = string_under(value, self.at) {
                return Some(Argument { index: Some(index), keyword, string });
            }
            let elements = match value {
                Expr::List(l) => &l.elts,
                Expr::Tuple(t) => &t.elts,
                Expr::Set(s) => &s.elts,
                _ => return None,
            };
            elements.iter().find_map(|e| string_under(e, self.at)).map(|string| Argument {
                index: None,
                keyword,
                string,
            })
        })
    }
}

/// The part of a string literal whose contents hold `at` (the cursor
/// right after the opening quote up to the closing one).
fn string_under(expr: &Expr, at: TextSize) -> Option<&StringLiteral> {
    let Expr::StringLiteral(s) = expr else { return None };
    s.value.iter().find(|part| part.content_range().contains_inclusive(at))
}

/// The site a string argument of `call` is: a target (the first argument
/// of a registration, positional or by a `target…` keyword), an
/// `add_import` module (its first argument) or name (any other string).
fn call_site(text: &str, at: TextSize, call: &ExprCall, arg: Argument<'_>) -> Option<Site> {
    let callee = match &*call.func {
        Expr::Attribute(a) => a.attr.as_str(),
        Expr::Name(n) => n.id.as_str(),
        _ => return None,
    };
    let content_range = arg.string.content_range();
    let content = text[content_range].to_string();
    if target_methods().contains(&callee) {
        let first = match arg.keyword {
            None => arg.index == Some(0),
            Some(k) => arg.index.is_some() && k.starts_with("target"),
        };
        let start = usize::from(content_range.start());
        return first.then(|| Site::Target {
            text: content,
            range: (start, usize::from(content_range.end())),
            prefix: text[start..usize::from(at).max(start)].to_string(),
        });
    }
    if callee == ADD_IMPORT {
        let module = import_module(call)?;
        if module.range() == arg.string.range() {
            return Some(Site::ImportModule { module: content });
        }
        return Some(Site::ImportName { module: text[module.content_range()].to_string(), name: content });
    }
    None
}

/// `add_import`'s module string: its first argument, positional or `module=`.
fn import_module(call: &ExprCall) -> Option<&StringLiteral> {
    let value = match call.arguments.iter_source_order().next()? {
        ArgOrKeyword::Arg(value) => value,
        ArgOrKeyword::Keyword(k) if k.arg.as_ref().is_some_and(|a| a.as_str() == "module") => &k.value,
        ArgOrKeyword::Keyword(_) => return None,
    };
    let Expr::StringLiteral(s) = value else { return None };
    s.value.iter().next()
}

/// The name of a top-level `def` / `async def` / `class` under the cursor
/// (its end included): the line of that name, 1-based.
fn definition_at(body: &[Stmt], text: &str, at: TextSize) -> Option<Site> {
    body.iter().find_map(|s| {
        let name = match s {
            Stmt::FunctionDef(f) => &f.name,
            Stmt::ClassDef(c) => &c.name,
            _ => return None,
        };
        (name.is_valid() && name.range().contains_inclusive(at))
            .then(|| Site::Definition { line: text[..usize::from(name.start())].matches('\n').count() + 1 })
    })
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

    #[test]
    fn a_name_that_ends_the_buffer() {
        // Regression: `class Foo` with nothing after the name sliced past
        // the line's end (a panic the server caught as an internal error).
        assert_eq!(at("x = 1\nclass Fo|o", "|"), Some(Site::Definition { line: 2 }));
        assert_eq!(site_at("class Foo", 9), Some(Site::Definition { line: 1 }));
        assert_eq!(site_at("async def f", 11), Some(Site::Definition { line: 1 }));
        assert_eq!(site_at("class ", 6), None);
    }

    #[test]
    fn the_tree_not_the_characters() {
        // A `# noqa` inside a string is no comment.
        assert_eq!(at("x = \"# noqa: PG1|01\"\n", "|"), None);
        // A parenthesis inside a string opens no call.
        let t = "config.add_import(\"m\", names=[\"f(\", \"Get|ACT\"])\n";
        assert_eq!(at(t, "|"), Some(Site::ImportName { module: "m".into(), name: "GetACT".into() }));
        // A `target=` after a multi-line description with a parenthesis in
        // it (which a scan of the characters took for a call); a string in
        // a nested call is that call's argument.
        let t = "@config.override_method(\n    description=\"\"\"a\n(b\"\"\",\n    target=\"A.f|\",\n)\n";
        assert!(matches!(at(t, "|"), Some(Site::Target { text, .. }) if text == "A.f"));
        assert_eq!(at("config.replace_class(name(\"Qwen|3MLP\"))\n", "|"), None);
        // Nested definitions are not top-level ones.
        assert_eq!(at("class A:\n    def f|(self): pass\n", "|"), None);
    }
}
