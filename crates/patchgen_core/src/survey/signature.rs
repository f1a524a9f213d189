//! The signature a replacement promises (its first function, or its first
//! class's `__init__`); the signature model itself is shared
//! ([`patchgen_python::pysource::signature`]).

pub use patchgen_python::pysource::signature::*;

/// The parameter list of the first function of a replacement's parsed
/// source (`text`), or of the `__init__` of its first class.
pub fn of_replacement(body: &[ruff_python_ast::Stmt], text: &str, class_init: bool) -> Option<Signature> {
    use ruff_python_ast::Stmt;
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) if !class_init => return Some(Signature::of(&f.parameters, text)),
            Stmt::ClassDef(c) if class_init => {
                return c.body.iter().rev().find_map(|s| match s {
                    Stmt::FunctionDef(f) if f.name.id.as_str() == "__init__" => {
                        Some(Signature::of(&f.parameters, text))
                    }
                    _ => None,
                });
            }
            _ => {}
        }
    }
    None
}

/// `of_replacement` of a source text (one `def` or `class`).
pub fn parse_signature(source: &str, class_init: bool) -> Option<Signature> {
    let parsed = ruff_python_parser::parse_module(source).ok()?;
    of_replacement(&parsed.syntax().body, source, class_init)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_function_of_replacement() {
        let s = parse_signature("x = 1\ndef f(a, *, b=2): pass\ndef g(c): pass\n", false).unwrap();
        assert_eq!(s.to_string(), "(a, *, b=2)");
    }

    #[test]
    fn class_init_of_replacement() {
        let s = parse_signature(
            "class A(B):\n    x = 1\n    def __init__(self, config, layer_idx=None):\n        pass\n",
            true,
        )
        .unwrap();
        assert_eq!(s.to_string(), "(self, config, layer_idx=None)");
    }
}
