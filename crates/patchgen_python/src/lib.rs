//! The Python-source layer every reader of Python files in patchgen builds on.
//!
//! - `pytext`: the Python text semantics the generator mimics
//!   (`str.splitlines`, `textwrap.dedent`, `inspect.getblock`, tokenize);
//! - `pysource`: a parsed file with its line index and ranges, name
//!   bindings checked against `symtable`, signatures, definition lookups;
//! - `semantic`: the one walk over statements and expressions (on ruff's
//!   visitor traits) and the shared facts (dotted names, docstrings, loaded
//!   names, one-target assignments) every rule, the scaffold, moe and
//!   codegen ask;
//! - `diff`: a port of `difflib` (`SequenceMatcher`, `unified_diff`),
//!   byte-exact with CPython's;
//! - `merge`: a line-level three-way merge (`git merge-file --diff3`), its
//!   regions kept as ranges so callers can say what was carried.
//!
//! Pure functions over text: this crate never touches the disk beyond
//! reading the files it is asked to parse, never prints, never reads the
//! environment.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod diff;
pub mod merge;
pub mod pysource;
pub mod pytext;
pub mod semantic;
