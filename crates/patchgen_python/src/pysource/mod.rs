//! The Python-source layer every reader of Python files builds on: the
//! config reader (`config`), the survey, lint rules and the scaffolder. It
//! knows Python's syntax and scoping, nothing of patch configs: it must not
//! depend on `config`, `survey`, `codegen` or the commands.
//!
//! API (stable: other branches build on it; tag `pysource-ground`):
//! - [`ParsedFile`] (`file.rs`): a file parsed once. `ParsedFile::parse(path,
//!   text)` → `Result<_, SyntaxProblem { line, message }>`; `text`
//!   (universal newlines applied), `parsed` (ruff's module), `body()`;
//!   line index: `line_of(offset)` (1-based), `line_column(offset)`
//!   (1-based, column counts characters), `location(TextRange)` →
//!   [`patchgen_diagnostics::Location`] (a range, end exclusive),
//!   `line_start(line)`, `line_count()`, `line_range(first, last)`; Python's line views:
//!   `splitlines()`, `splitlines_keepends()`, `readlines()`,
//!   `only_newline_breaks()`; `memo::<T>()`: a per-file slot of any
//!   `Default` type, for data derived once from the file.
//!   [`keyword_line`]: Python's `lineno` of a `def`/`class`.
//! - [`names`]: THE name-binding visitor. `bindings(body)` → every
//!   [`names::Binding`] `{ name, kind, range, node }` of one scope, in source
//!   order, as CPython's `symtable` sees them (checked against it);
//!   `Binding::is_local()` is false for `global`/`nonlocal` declarations.
//!   `bound_names(stmt)`: the distinct local names a statement binds;
//!   `target_names(expr)`: the names an assignment target binds;
//!   `free_names(body)`: the global names code reads (pyflakes F821's view),
//!   first use each; `free_name_uses(body)` / `free_name_uses_in(body,
//!   wanted)`: every such use, in order; `is_builtin(name)`.
//! - [`signature`]: `Signature::of(&Parameters, text)` → `{ params: [Param {
//!   name, kind: ParamKind, default: Option<String> }] }` (Display: Python's
//!   notation); `decorators(list, text)` → `[DecoratorInfo { name, text }]`;
//!   `decorator_name(&Decorator)` → dotted name without call arguments;
//!   `bases(&StmtClassDef, text)`; `one_line(text)`;
//!   `FunctionInfo::of(def, file)`.
//! - [`defs`]: `class(body, name)` / `function(body, name)` (the last
//!   definition wins, as in the namespace), `methods(class)`,
//!   `method(class, name)`, `dunder_all(body)` → `DunderAll { entries: [(name,
//!   range)], complete }`.
//! - [`calls`]: `call_argument_at(file, (line, column), keyword, position)`
//!   → the range of one argument of the call starting there.

pub mod calls;
pub mod defs;
mod file;
pub mod names;
pub mod signature;

pub use calls::call_argument_at;
pub use file::{ParsedFile, SyntaxProblem, keyword_line, line_starts};
