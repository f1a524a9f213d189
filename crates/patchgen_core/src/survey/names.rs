//! Names, as the survey (and code written against this module) asks for
//! them; the answers are [`patchgen_python::pysource::names`]'s, the one binding
//! visitor.

use ruff_python_ast::Stmt;
use ruff_text_size::TextSize;

pub use patchgen_python::pysource::names::{free_name_uses, free_name_uses_in, free_names, is_builtin};

/// Names bound directly in `body` (one scope, declarations included), with
/// where the binding statement, handler or pattern starts.
pub fn bound_in(body: &[Stmt]) -> Vec<(String, TextSize)> {
    patchgen_python::pysource::names::bindings(body).into_iter().map(|b| (b.name.to_string(), b.node.start())).collect()
}
