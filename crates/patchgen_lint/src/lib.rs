//! `patchgen lint`: the protocol's silent pitfalls as rules with stable codes
//! (`PG101` …), each pointing first at the config line the user must edit.
//!
//! # How lint sees a config
//! [`context::Shared`] is built once per run: the project, the pipeline
//! [`patchgen_core::pipeline::Context`] (evaluation, upstream lookup, codegen — the
//! same code `check` runs, so lint and check never disagree about what the
//! code is), the upstream version as a [`patchgen_core::survey::modules::Version`]
//! (any upstream module, parsed once, classes and their base chains) and the
//! lint settings. For every config a [`LintContext`] holds:
//! - `module`, `plan` (the evaluated [`patchgen_config::PatchPlan`]: each patch's
//!   `registered_at` config line and replacement `SourceObject`), `config`
//!   (the config file, parsed);
//! - `generated`: the codegen output (what `check` computes, *before* ruff:
//!   lint never runs ruff), parsed; `py_path` the checked-in file it
//!   would be written to; `upstream`: the upstream module, parsed;
//! - `origins`: which generated `def`/`class` came from which config
//!   definition; [`LintContext::at_generated`] turns an offset in the
//!   generated text into the config location (the line of the replacement's
//!   definition that produced it) plus the generated/checked-in file and
//!   line as a related location;
//! - lazily: [`LintContext::upstream_configuration`]
//!   (`configuration_<m>.py` next to the modeling module),
//!   [`LintContext::package_init`] (the model package's `__init__.py`),
//!   [`LintContext::checked_in`] (the generated file on disk), and through
//!   `shared`: [`context::Shared::upstream_module`], [`context::Shared::toy_configs`].
//!
//! A [`ProjectContext`] holds every config's context, for cross-config
//! rules (PG202 compares `<m>_gpu_…`/`<m>_npu_…` siblings).
//!
//! # Adding a rule
//! 1. Write `rules/pgNNN_<kebab_name_with_underscores>.rs`. Its `//!`
//!    comment is the rule's documentation, printed by `patchgen rule PGNNN`
//!    and rendered into `docs/rules/PGNNN.md`: a first line
//!    `<code> <name>: <summary>` then the sections `## What it does`,
//!    `## Why is this bad?`, `## Example`, `## Use instead` (as ruff's).
//!    Define `pub const RULE: Rule = Rule { code, name, default_on,
//!    severity, doc: include_str!("pgNNN_….rs"), check, check_project }`:
//!    `check` runs per config and returns [`Diagnostic`]s made with
//!    [`Rule::diagnostic`]; `check_project` (optional) runs once with every
//!    config, which `patchgen lint` has settled ([`LintContext::settle`]:
//!    the generated module is gone by then; what a project rule needs of it
//!    is a fact the context keeps, such as [`LintContext::overridden`]).
//!    Locate findings with [`LintContext::at_generated`] or
//!    [`LintContext::at_config`] so the primary location is the config
//!    line to edit. Walk code with `patchgen_python::semantic` (never a
//!    hand-written walker); what another rule or crate needs goes in a
//!    module of this crate (`pyfacts`, `package`, `logits_to_keep`,
//!    `init_weights`, `automodel`, `toy_config`, ...): rule modules are
//!    private.
//! 2. Add `pgNNN_….rs` to `rules/mod.rs` (`mod` line and the [`rules::RULES`]
//!    table, kept in code order).
//! 3. Fixtures: extend the project under `tests/fixtures/lint/toy/` (configs
//!    in `pkg/`, hand-written upstream `transformers` in `upstream/v1` and
//!    `upstream/v2`) or add one like it. Mark every line a finding must point
//!    at with `# LINT: PGNNN` (`PGNNN (v2)` when only one upstream version
//!    has it) and look-alikes that must not fire with `# LINT: none (why)`.
//!    In `tests/lint.rs` add `check_rule("PGNNN", "v1")`: it runs lint with
//!    `--select PGNNN`, requires the findings to equal the markers exactly,
//!    and snapshots the rendered text (`tests/snapshots/lint__PGNNN_v1.snap`;
//!    `INSTA_UPDATE=always` writes new ones — review them).
//! 4. `UPDATE_DOCS=1 cargo test --profile testing --test lint docs_rules` rewrites
//!    `docs/rules/`; the same test without `UPDATE_DOCS` fails when the
//!    checked-in docs differ from the code.
//!
//! # Suppression
//! `# noqa: PG101[, PG203]` on the config line a finding points at silences
//! those codes there; a bare `# noqa` silences every lint code on that line
//! (as ruff treats a bare `noqa`). `per-file-ignores` in
//! `[tool.patchgen.lint]` maps glob patterns (relative to the project root)
//! to codes.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod automodel;
pub mod cached;
pub mod catalogue;
pub mod context;
pub mod docs;
pub mod docstring;
pub mod fix;
mod genmap;
pub mod init_weights;
pub mod logits_to_keep;
pub mod noqa;
pub mod package;
pub mod patched;
pub mod pyfacts;
mod rules;
pub mod run;
pub mod settings;
pub mod signature;
pub mod toy_config;

pub use context::{LintContext, ProjectContext};
use patchgen_diagnostics::{Diagnostic, Severity};
pub use rules::RULES;
pub use run::{
    BufferLint, GeneratedDef, LintReport, Options, RuleQuery, lint, lint_buffers, render_github, render_json,
    render_statistics, render_text, rule_text,
};

/// One lint rule: its identity, documentation and check functions.
pub struct Rule {
    /// Stable code, `PG101`.
    pub code: &'static str,
    /// Kebab-case name, `dead-patch-target`.
    pub name: &'static str,
    /// Enabled without `--select`.
    pub default_on: bool,
    pub severity: Severity,
    /// The rule file's text (`include_str!`); its leading `//!` block is the doc.
    pub doc: &'static str,
    /// Findings about one config.
    pub check: fn(&LintContext) -> Vec<Diagnostic>,
    /// Findings across configs (run once per lint run).
    pub check_project: Option<fn(&ProjectContext) -> Vec<Diagnostic>>,
}

impl Rule {
    /// The documentation: the leading `//!` lines of the rule's file.
    pub fn doc_text(&self) -> String {
        let mut out = String::new();
        for line in self.doc.lines() {
            let Some(rest) = line.strip_prefix("//!") else {
                break;
            };
            out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            out.push('\n');
        }
        out
    }

    /// The one-line summary (the doc's first line after `CODE name:`).
    pub fn summary(&self) -> String {
        let doc = self.doc_text();
        let first = doc.lines().next().unwrap_or_default();
        first.split_once(": ").map(|(_, s)| s.to_string()).unwrap_or_else(|| first.to_string())
    }

    /// A diagnostic of this rule.
    pub fn diagnostic(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self.code, self.name, self.severity, message)
    }
}

/// The rule with this code (case-insensitive) or name.
pub fn rule(code: &str) -> Option<&'static Rule> {
    rules::RULES.iter().find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}
