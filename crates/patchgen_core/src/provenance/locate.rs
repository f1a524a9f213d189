//! Placing a ruff rejection of a generated file at the line to edit: the
//! config line that wrote the offending generated line (a patch, helper,
//! import or post-import block), else the upstream line it was copied from.

use serde::Deserialize;

use super::map::{Resolver, SourceMap};
use crate::normalize::Ruff;
use crate::pipeline::Raw;
use patchgen_diagnostics::Location;

#[derive(Deserialize)]
struct Row {
    row: usize,
}

#[derive(Deserialize)]
struct Finding {
    location: Row,
}

/// Where the first finding that made ruff reject `raw` comes from, and
/// where it is in the generated text (after ruff's fixes): `None` when
/// ruff reports nothing readable.
pub fn ruff_rejection(ruff: &Ruff, raw: &Raw) -> Option<(Location, Location)> {
    let (fixed, json) = ruff.check_findings(&raw.text, &raw.abs_target).ok()?;
    let findings: Vec<Finding> = serde_json::from_str(json.trim()).ok()?;
    let row = findings.first()?.location.row;
    let map = SourceMap::build(&raw.text, &raw.trace, &fixed, &fixed, &[]);
    let origin = Resolver::new(&raw.job.plan, &raw.job.upstream_origin, &map).map_line(map.line(row)?);
    let primary = Location::line(origin.path?, origin.line?);
    Some((primary, Location::line(raw.job.py_path.clone(), row)))
}
