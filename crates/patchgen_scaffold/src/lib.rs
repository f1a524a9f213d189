//! `patchgen new <m>`: a new model's first patch-gen config, `__init__.py`,
//! toy config, converter and test-table rows, from the project's closest
//! sibling (protocol Phases 1, 2, 4 and 6; step 1.7 "prefer reuse over
//! copy-paste").
//!
//! `run` is the sequence of the phases, one module each: `scan` (the
//! request, the project, the upstream model), `template` (the sibling to
//! start from), `configs` (each backend's config, its patches retargeted),
//! `companions` (converter, parallel plan, `__init__.py`, toy config, test
//! rows), `write` (never overwriting a file), `prune` (generate, and prune
//! until ruff and lint accept the result) and `report` (what was done).
//! `--dry-run` (`dry_run`) runs all of it in a private copy.
//!
//! The phases draw on: `facts` (the upstream modeling module: category,
//! prefix, the exception facts), `configuration` (its configuration
//! module's defaults), `retarget` (the template's patches moved onto the
//! new model), `render` (the config text), `init` (the `__init__.py`
//! patterns A, B, C), `moe` (the MoE needs from `moe inspect`'s and PG401's
//! facts, the converter and `parallel_plan.py`), `hub` (the MoE block kept
//! behind a hub kernel), `kernels` (OpSlot guards), `toy`, `tables` (the
//! test entries written by hand), `test_rows` (those written for you),
//! `ruff_findings` and `lint_fixes` (what is written for ruff findings and
//! lint errors in unpatched upstream code), and `pg301_copy` (a template
//! forward with an inherited PG301 copied and fixed instead of reused).

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod companions;
mod configs;
pub mod configuration;
pub mod declined;
pub mod docstring_args;
pub mod dry_run;
pub mod facts;
pub mod hub;
pub mod init;
pub mod kernels;
pub mod lint_fixes;
pub mod moe;
pub mod pg301_copy;
pub mod port_copy;
mod prune;
pub mod render;
mod report;
pub mod retarget;
pub mod ruff_findings;
mod scan;
pub mod tables;
mod template;
pub mod test_rows;
pub mod toy;
mod write;

use std::path::PathBuf;

pub use report::{BackendPlan, GenerationResult, PlannedFile, Report, render_text};
pub(crate) use scan::ProjectConfig;

/// `--category`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CategoryArg {
    Auto,
    Text,
    Moe,
    Vlm,
    VlmMoe,
    Omni,
    OmniMoe,
}

/// What to scaffold: the command's arguments, parsed once.
#[derive(Clone, Debug)]
pub struct Request {
    /// The HF module name of the model (transformers.models.<m>).
    pub model: String,
    /// The project model to start from (default: the protocol's reference model for the category).
    pub like: Option<String>,
    /// Backends to write configs for (`gpu`, `npu`).
    pub backend: Vec<String>,
    /// The model category (default: detected from the upstream module).
    pub category: CategoryArg,
    /// Run everything in a private copy and report the final plan; write nothing.
    pub dry_run: bool,
    /// The distribution the model comes from (`transformers`).
    pub package: String,
}

pub struct Options {
    pub args: Request,
    pub cwd: PathBuf,
    /// The environment (the binary's snapshot): settings, the search path, ruff's.
    pub env: patchgen_core::settings::Env,
}

/// A failure: usage (exit 2) or a run that could not finish (exit 1).
pub type NewError = patchgen_core::error::RunError;

/// Run `new`: the phases in order.
pub fn run(opts: &Options) -> Result<Report, NewError> {
    let args = &opts.args;
    if args.dry_run {
        return dry_run::run(opts);
    }
    let scan = scan::Scan::read(opts)?;
    let template = template::choose(&scan, args.like.as_deref())?;
    let mut configs = configs::plan(&scan, &template)?;
    let companions = companions::plan(&scan, &template, &mut configs);
    let configs::Configs { plans, mut files, mut warnings } = configs;
    write::refuse_overwrites(&scan.model, &scan.model_dir, &mut files, &plans, &mut warnings)?;
    let test_rows = companions::test_rows(&scan, &template, &companions, &files)?;
    let mut tables = tables::entries(&scan.model, scan.category, &companions.default_arch);
    tables.retain(|e| !test_rows::handles(e.file));
    let next_steps = vec![format!(
        "add `{}` to `from . import (...)` and `__all__` in {}",
        scan.model,
        scan.rel(&scan.project.settings.search_root.join("__init__.py"))
    )];
    let mut report = Report {
        model: scan.model.clone(),
        prefix: scan.facts.prefix.clone(),
        upstream: scan.facts.file.path.display().to_string(),
        category: scan.category.as_str(),
        category_evidence: scan.evidence.clone(),
        template: template.name.clone(),
        template_reason: template.reason.clone(),
        backends: plans,
        files,
        moe_needs: companions.moe_first.as_ref().map(|n| n.lines.clone()).unwrap_or_default(),
        moe: companions.moe_first.clone(),
        generation: Vec::new(),
        lint: String::new(),
        tables,
        test_rows: Some(test_rows),
        next_steps,
        review: Vec::new(),
        warnings,
        dry_run: args.dry_run,
    };
    write::write(&scan.ctx.ruff, &mut report)?;
    let facts = &scan.facts;
    let last_lint = prune::all(
        &scan.project,
        &opts.cwd,
        &opts.env,
        &mut report,
        template.facts.as_ref(),
        facts,
        scan.configuration_file.as_ref(),
    );
    report::finish(&mut report, &scan, &companions, last_lint, &opts.cwd, &opts.env);
    Ok(report)
}
