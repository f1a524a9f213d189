//! The Python-source layer every reader of Python files in patchgen builds on.
//!
//! - `pytext`: the Python text semantics the generator mimics
//!   (`str.splitlines`, `textwrap.dedent`, `inspect.getblock`, tokenize);
//! - `pysource`: a parsed file with its line index and ranges, name
//!   bindings checked against `symtable`, signatures, definition lookups;
//! - `diff`: a port of `difflib` (`SequenceMatcher`, `unified_diff`),
//!   byte-exact with CPython's.
//!
//! Pure functions over text: this crate never touches the disk beyond
//! reading the files it is asked to parse, never prints, never reads the
//! environment.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod diff;
pub mod pysource;
pub mod pytext;
