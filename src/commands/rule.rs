//! `patchgen rule CODE|--all`: a lint rule's documentation (markdown),
//! printed as a report.

use patchgen_lint::{RuleQuery, rule_text};
use serde::Serialize;

use crate::printer::{ExitStatus, Format, PlainReport};
use crate::session::Session;

const RULE_EXAMPLES: &str = "\
Examples:
  patchgen rule PG101                  one rule's documentation (what, why, example, fix)
  patchgen rule dead-patch-target      the same, by name
  patchgen rule --all                  every rule, in code order";

/// Print a lint rule's documentation.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = RULE_EXAMPLES)]
pub struct RuleArgs {
    /// The rule's code (PG101) or name (dead-patch-target).
    #[arg(value_name = "CODE", required_unless_present = "all")]
    pub code: Option<String>,
    /// Every rule, in code order.
    #[arg(long)]
    pub all: bool,
    /// Output format [default: text; env: PATCHGEN_OUTPUT_FORMAT]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

impl RuleArgs {
    pub fn query(&self) -> RuleQuery {
        match (&self.code, self.all) {
            (_, true) | (None, false) => RuleQuery::All,
            (Some(code), false) => RuleQuery::One(code.clone()),
        }
    }
}

/// `patchgen rule`: the rule's documentation, printed as a report.
pub fn run(args: &RuleArgs) -> ExitStatus {
    let session = match Session::start("rule", args.format) {
        Ok(c) => c,
        Err(status) => return status,
    };
    session.finish_with(rule_text(&args.query()).map(|text| RuleDocs { text }))
}

/// `patchgen rule`'s output: a rule's documentation (markdown).
#[derive(Serialize)]
pub struct RuleDocs {
    pub text: String,
}

impl PlainReport for RuleDocs {
    const COMMAND: &'static str = "rule";
    fn render(&self) -> String {
        self.text.clone()
    }
}
