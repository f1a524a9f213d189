//! `patchgen moe`: an MoE checkpoint's expert layout, read from safetensors
//! headers, and its offline conversion between the per-expert and the
//! transformers-v5 fused layouts.
//!
//! - `header`: one safetensors header, validated (located errors);
//! - `checkpoint`: an index and its shards, or one file;
//! - `config`: the MoE dimensions of `config.json`;
//! - `layout`: expert modules and their family (A/A'/B/C/D/E);
//! - `recipes`: which upstream conversion recipe applies to a `model_type`
//!   (static reading of `transformers/conversion_mapping.py`; shared with
//!   lint rule PG401);
//! - `modeling`: whether a modeling module's classes hold fused expert
//!   parameters (AST; shared with PG401);
//! - `inspect`: the `moe inspect` report; `plan` + `convert`: `moe convert`;
//! - `error`: `MoeError`, what can go wrong on local files, by kind;
//! - `remote`: both on `hf://`, `s3://`, `gs://`, `az://`, `http(s)://`.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod cancel;
pub mod checkpoint;
pub mod config;
pub mod convert;
pub mod error;
pub mod header;
pub mod inspect;
pub mod json;
pub mod layout;
pub mod modeling;
pub mod plan;
pub mod recipes;
pub mod remote;
pub mod report;

use patchgen_diagnostics::codes::Code;
use patchgen_diagnostics::{Diagnostic, Location, Severity};

/// The codes of `moe inspect`'s findings (`PGM…`; listed in
/// docs/diagnostics.md, a test keeps the two equal).
pub const INCOMPLETE: Code = Code {
    code: "PGM001",
    name: "moe-incomplete",
    severity: Severity::Error,
    summary: "an expert module lacks experts or a projection, or its shapes, dtypes or layers disagree with config.json",
};
pub const AMBIGUOUS_LAYOUT: Code = Code {
    code: "PGM002",
    name: "moe-ambiguous-layout",
    severity: Severity::Warning,
    summary: "a fused expert tensor is square per expert: its layout cannot be told by shape",
};
pub const NOT_LOADED: Code = Code {
    code: "PGM003",
    name: "moe-not-loaded",
    severity: Severity::Warning,
    summary: "the upstream recipe (or a missing converter) would leave these expert keys unloaded: random experts",
};
pub const ALL_CODES: [Code; 3] = [INCOMPLETE, AMBIGUOUS_LAYOUT, NOT_LOADED];

/// The findings of an inspect report as diagnostics (`PGM…`,
/// docs/diagnostics.md), located at the checkpoint.
pub fn diagnostics_of(r: &inspect::InspectReport, at: &std::path::Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mk = |code: Code, msg: String, help: &str| {
        let mut d = code.diagnostic(msg);
        d.location = Some(Location::file(at));
        d.help = Some(help.to_string());
        d
    };
    for g in &r.groups {
        for p in &g.problems {
            out.push(mk(
                INCOMPLETE,
                format!("{}.experts: {p}", g.prefix),
                "a converter cannot fix missing or mismatched experts: fetch the complete checkpoint",
            ));
        }
    }
    for p in &r.layer_problems {
        out.push(mk(INCOMPLETE, p.clone(), "check config.json's dense-layer fields against the checkpoint"));
    }
    for g in &r.groups {
        for a in &g.ambiguous {
            out.push(mk(
                AMBIGUOUS_LAYOUT,
                format!("{}.experts: {a}", g.prefix),
                "converters must be told the layout (`moe convert --source-layout`), never guess",
            ));
        }
    }
    for v in &r.verdict {
        if v.not_loaded {
            out.push(mk(
                NOT_LOADED,
                v.text.clone(),
                "convert the checkpoint (`patchgen moe convert`) or register a checkpoint converter",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_code_is_documented() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/diagnostics.md")).unwrap();
        for c in super::ALL_CODES {
            let sev = c.severity.as_str();
            assert!(
                doc.contains(&format!("| `{}` | `{}` | {sev} |", c.code, c.name)),
                "{} is not in docs/diagnostics.md",
                c.code
            );
        }
    }
}
