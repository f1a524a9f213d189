//! Method overrides: preparing the replacement's text (the reference's
//! `_apply_method_override`) and splicing it into the class segment
//! (`_replace_method_body_with_preserved`, in [`class_edit`]).

mod class_edit;
#[cfg(test)]
mod tests;

use ruff_python_ast::{Expr, Stmt};

use super::text::{apply_name_map, py_replace, strip_patch_decorators_traced};
use patchgen_config::plan::Patch;
use patchgen_python::pytext;
use patchgen_python::semantic::walk::{self, Scope};

pub use class_edit::{ClassEdit, ClassLine, TracedClass};

/// Whether any function is defined anywhere in the statements (`ast.walk`).
fn contains_function(body: &[Stmt]) -> bool {
    walk::statements(body, Scope::All).into_iter().any(|s| matches!(s, Stmt::FunctionDef(_)))
}

/// `_apply_method_override`: the cleaned replacement source, or `None` when
/// the reference would not apply the override (no source, or the
/// dedented, name-mapped source does not parse as code with a function).
pub fn prepare_override(patch: &Patch, method_name: &str) -> Option<(String, std::sync::Arc<Vec<u32>>)> {
    let replacement = patch.replacement.as_ref()?;
    if replacement.source.is_empty() {
        return None;
    }
    let dedented = pytext::dedent(&replacement.source);
    let src = apply_name_map(&dedented, patch.name_map.as_deref());
    let (mut cleaned, kept) = strip_patch_decorators_traced(&src);
    let kept = std::sync::Arc::new(kept);
    if replacement.name != method_name {
        cleaned = py_replace(&cleaned, &format!("def {}(", replacement.name), &format!("def {method_name}("), Some(1));
    }
    // The config file's parse already shows that the dedented source parses
    // and holds a function, unless the name map changed it.
    if replacement.dedents_to_function && src == dedented {
        return Some((cleaned, kept));
    }
    let parsed = ruff_python_parser::parse_module(&src).ok()?;
    if !contains_function(&parsed.syntax().body) {
        return None;
    }
    Some((cleaned, kept))
}

fn is_empty_body_node(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Pass(_) => true,
        Stmt::Expr(e) => matches!(&*e.value, Expr::EllipsisLiteral(_)),
        _ => false,
    }
}
