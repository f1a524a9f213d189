//! Python's text semantics, reproduced exactly: what `str.splitlines`,
//! `str.strip`, `textwrap.dedent` and `inspect.getblock` do to a string.

pub mod getblock;
pub mod tokenize;
