//! Where the expected text of each drift hunk comes from: for a generated
//! file that differs from what its config produces, each hunk of the
//! difference (checked-in → expected) with the origin of its first
//! expected line (a config line of a patch or import, or an upstream line).

use super::map::{Origin, Resolver, SourceMap};
use crate::pipeline::Generated;
use patchgen_python::diff::{SequenceMatcher, Tag};
use patchgen_python::pytext;

/// Per drift hunk of `checked_in` against `g.py`: its header
/// (`@@ -a,b +c,d @@`, as the drift diff shows it) and the origin of the
/// first expected line it changes (or the expected line where it deletes).
pub fn hunk_origins(g: &Generated, checked_in: &str) -> Vec<(String, Origin)> {
    let (map, _) = SourceMap::without_steps(&g.raw, &g.trace, &g.py);
    let resolver = Resolver::new(&g.job.plan, &g.job.upstream_origin, &map);
    let a = pytext::splitlines_keepends(checked_in);
    let b = pytext::splitlines_keepends(&g.py);
    let mut out = Vec::new();
    for group in SequenceMatcher::new(&a, &b).get_grouped_opcodes(3) {
        let (lo, hi) = (group[0], group[group.len() - 1]);
        let Some(op) = group.iter().find(|op| op.tag != Tag::Equal) else { continue };
        let line = (op.j1 + 1).min(map.lines.len());
        let Some(origin) = resolver.line(line) else { continue };
        let range = |start: usize, stop: usize| match stop - start {
            1 => format!("{}", start + 1),
            0 => format!("{start},0"),
            n => format!("{},{n}", start + 1),
        };
        out.push((format!("@@ -{} +{} @@", range(lo.i1, hi.i2), range(lo.j1, hi.j2)), origin));
    }
    out
}
