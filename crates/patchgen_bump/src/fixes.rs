//! The mechanical fixes a bump needs (issue 34, `patchgen lint --fix`):
//! retargeting a target that reappears under another name, `Optional[X]`
//! where the new module no longer imports it, stale `drop_import_names`
//! and placeholders, auto_docstring entries.
//!
//! A seam: `lint --fix` has not landed yet, so no fix is applied and every
//! config reports `fixes: []`. When it lands, `apply` runs its fixes on the
//! ported configs (before regeneration) and returns what it changed; the
//! report, the JSON (`fixes: [{code, line}]`) and the `retargeted` status
//! are already wired to it.

use std::path::Path;

/// One fix applied to a config: the rule's code and the config line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub code: String,
    pub line: usize,
}

/// The fixes applied to the config at `path` (none yet: see the module doc).
pub fn apply(_path: &Path) -> Vec<Fix> {
    Vec::new()
}
