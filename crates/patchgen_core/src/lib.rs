//! The generator and the commands that run on it, as a library.
//!
//! The pipeline, one module per stage:
//! `project` (pyproject + discovery) and `settings` (flags, `PATCHGEN_*`,
//! `[tool.patchgen]` resolved once) → `patchgen_config` (static evaluation
//! → `PatchPlan`) → `upstream` (module resolution) → `codegen` (pure text
//! generation) → `normalize` (ruff) → `patchgen_python::diff` (difflib
//! port) → `check` (drift gate), driven by `pipeline`. `survey` (pin-bump
//! drift of every patch target) and `reference` (HF sources from the
//! pinned wheel) are built on the same stages; `port` carries an upstream
//! change into a patch (a three-way merge; `bump` and `new` use it); `workers` is the thread pool
//! every command evaluates on.
//!
//! A library: it returns reports and typed errors; it never prints and
//! never parses a command line. The binary crate (`patchgen`) does both.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod atomic;
pub mod check;
pub mod codegen;
pub mod error;
pub mod explain;
pub mod normalize;
pub mod pipeline;
pub mod port;
pub mod progress;
pub mod project;
pub mod provenance;
pub mod reference;
pub mod settings;
pub mod survey;
pub mod timings;
pub mod upstream;
pub mod workers;
