//! Provenance: where every line of a generated file came from.
//!
//! - [`raw`]: what codegen records while it assembles the raw text (one
//!   origin per line, and why upstream lines it did not copy are missing).
//! - [`map`]: the source map of the final file, carried from the raw text
//!   through `ruff check --fix` and `ruff format` by line matching
//!   (`crate::diff`'s `SequenceMatcher`), with each origin resolved
//!   against the plan (config file and line, patch target and type).
//!
//! Nothing here runs during generation or `--check` beyond the raw trace;
//! the map is built on request (`explain`, `lint`, a drift's details).

pub mod drift;
pub mod locate;
pub mod map;
pub mod raw;
