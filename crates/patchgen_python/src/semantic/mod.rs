//! The one semantic layer under every reader of Python code in patchgen:
//! the lint rules, the scaffold, moe, codegen and the server ask it instead
//! of walking the tree themselves (as ruff's rules all stand on
//! `ruff_python_ast::visitor` and `ruff_python_semantic`).
//!
//! - [`walk`]: the statements and expressions of a body, built on ruff's
//!   `StatementVisitor` and `Visitor`. A walk either stays in the body's own
//!   scope ([`Scope::Own`]: a nested `def`/`class` statement is seen, its
//!   body is not) or goes everywhere ([`Scope::All`]). Both see every block
//!   Python runs as part of the body: `if`/`elif`/`else`, `for`/`while`
//!   and their `else`, `with`, `try`/`except`/`else`/`finally`, `match`
//!   cases, in source order (pre-order: a compound statement before its
//!   blocks).
//! - [`facts`]: small facts about one node: the dotted name of an
//!   expression, a body's docstring, the names a statement loads, the
//!   `target = value` of a one-target assignment.
//!
//! Pure functions over ruff's AST: no I/O, no state.

pub mod facts;
pub mod walk;

pub use walk::Scope;

#[cfg(test)]
mod tests;
