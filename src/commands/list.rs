//! `patchgen list` (the reference's `--list`): every discovered config,
//! evaluated (in parallel) to tell configs from helper modules and broken
//! ones. Returns a [`ListReport`].

use std::io;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use crate::args::ListArgs;
use crate::printer::{ExitStatus, Printer, Report, fields};
use crate::session::{Fatal, Session};
use patchgen_core::pipeline::{Context, Failure};
use patchgen_core::settings::Overrides;
use patchgen_diagnostics::Diagnostic;

/// One discovered module.
#[derive(Debug, Serialize)]
pub struct ListRow {
    pub module: String,
    pub path: PathBuf,
    /// `ok`, `not_a_config` (no PatchConfig: skipped, as the reference does) or `error`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_module: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patches: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    diagnostic: Option<Diagnostic>,
}

/// The report of `list`.
#[derive(Debug, Serialize)]
pub struct ListReport {
    pub configs: Vec<ListRow>,
    #[serde(skip)]
    verbose: bool,
    #[serde(skip)]
    config_name: String,
}

pub fn run(args: &ListArgs) -> ExitStatus {
    let overrides = Overrides { ruff: None, jobs: args.jobs, format: args.format.format, no_cache: true };
    Session::run_pipeline("list", &overrides, &args.project, None, |ctx, _| list(ctx, args))
}

/// Discover and evaluate every config.
pub fn list(ctx: &Context, args: &ListArgs) -> Result<ListReport, Fatal> {
    let configs = ctx.project.discover().map_err(|e| Fatal::plain("list", e.to_string()))?;
    let config_name = &args.config_name.config_name;
    let rows = configs
        .par_iter()
        .map(|c| {
            let mut row = ListRow {
                module: c.module.clone(),
                path: c.path.clone(),
                status: "ok",
                source_module: None,
                target_file: None,
                patches: None,
                error: None,
                diagnostic: None,
            };
            match ctx.evaluate(&c.module, config_name) {
                Ok((plan, _, _)) => {
                    row.source_module = Some(plan.source_module);
                    row.target_file = Some(plan.target_file);
                    row.patches = Some(plan.patches.len());
                }
                Err(Failure::NotAConfig { .. }) => row.status = "not_a_config",
                Err(f) => {
                    row.status = "error";
                    row.error = Some(f.to_string());
                    row.diagnostic = Some(f.diagnostic(&c.module));
                }
            }
            row
        })
        .collect();
    Ok(ListReport { configs: rows, verbose: args.verbose, config_name: config_name.clone() })
}

impl Report for ListReport {
    fn command(&self) -> &'static str {
        "list"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.configs.iter().filter_map(|r| r.diagnostic.as_ref()).collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> io::Result<()> {
        p.out("Available patch configurations:\n")?;
        let mut any = false;
        for row in &self.configs {
            match row.status {
                "ok" => {
                    any = true;
                    p.out(&format!("  • {}\n", row.module))?;
                }
                "not_a_config" => {
                    if self.verbose {
                        p.err(&format!("  (skipped {}: no `{}` PatchConfig)\n", row.module, self.config_name))?;
                    }
                }
                _ => {
                    let pad = "    ";
                    let msg = row
                        .error
                        .as_deref()
                        .unwrap_or_default()
                        .lines()
                        .map(|l| format!("{pad}{l}"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    if let Some(d) = row.diagnostic.as_ref().filter(|d| d.is_located_error()) {
                        p.diagnostic(d)?;
                    }
                    let fail = p.style.bad("FAIL");
                    p.err(&format!("  {fail} {}\n{msg}\n", row.module))?;
                }
            }
        }
        if !any {
            p.out("  (none found)\n")?;
        }
        Ok(())
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.configs.iter().any(|r| r.status == "error"))
    }
}
