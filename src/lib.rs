//! patchgen: static, byte-exact re-implementation of VeOmni's patchgen.
//!
//! The pipeline, one module per stage:
//! `project` (pyproject + discovery) → `config` (static evaluation → `PatchPlan`)
//! → `upstream` (module resolution) → `codegen` (pure text generation)
//! → `normalize` (ruff) → `diff` (difflib port) → `check` (drift gate).
//! `pytext` holds the Python text semantics everything else mimics
//! (`str.splitlines`, `textwrap.dedent`, `inspect.getblock`, …);
//! `pysource` the Python-source layer every reader of Python files shares
//! (a parsed file with its line index, name bindings, signatures).

pub mod atomic;
pub mod cache;
pub mod check;
pub mod cli;
pub mod codegen;
pub mod config;
pub mod diagnostics;
pub mod diff;
pub mod explain;
pub mod json;
pub mod lint;
pub mod moe;
pub mod normalize;
pub mod pipeline;
pub mod project;
pub mod provenance;
pub mod pysource;
pub mod pytext;
pub mod reference;
pub mod scaffold;
pub mod settings;
pub mod suggest;
pub mod survey;
pub mod timings;
pub mod upstream;
