//! Every code patchgen reports, described for a code-scanning report
//! (`sarif`'s `tool.driver.rules`): a lint rule by its rule file (the doc's
//! first line as summary, the whole doc as help, `rules/<CODE>.md` under
//! the published docs), a core code (`PGE…`, `PGW…`, `PGD…`, `PGS…`, …) by
//! the code table (`diagnostics.md`), anything else by the diagnostic itself.

use patchgen_diagnostics::render::RuleInfo;
use patchgen_diagnostics::{Diagnostic, codes};

use super::{docs, rule};

/// What a report says about `d`'s code; `docs_url` is where the
/// documentation is published (ending in `/`), when that is known.
pub fn rule_info(d: &Diagnostic, docs_url: Option<&str>) -> RuleInfo {
    if let Some(r) = rule(&d.code).filter(|r| r.code == d.code) {
        return RuleInfo {
            code: r.code.to_string(),
            name: r.name.to_string(),
            summary: r.summary(),
            doc: Some(docs::rule_markdown(r)),
            help_uri: docs_url.map(|u| format!("{u}rules/{}.md", r.code)),
            severity: r.severity,
        };
    }
    if let Some(c) = codes::ALL.iter().find(|c| c.code == d.code) {
        return RuleInfo {
            code: c.code.to_string(),
            name: c.name.to_string(),
            summary: c.summary.to_string(),
            doc: None,
            help_uri: docs_url.map(|u| format!("{u}diagnostics.md")),
            severity: c.severity,
        };
    }
    RuleInfo::of(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_diagnostics::Severity;

    #[test]
    fn lint_rules_core_codes_and_the_rest() {
        let d = Diagnostic::new("PG101", "dead-patch-target", Severity::Error, "m");
        let r = rule_info(&d, Some("https://x/docs/"));
        assert_eq!(r.summary, "a patch whose target the upstream module does not define.");
        assert_eq!(r.help_uri.as_deref(), Some("https://x/docs/rules/PG101.md"));
        assert!(r.doc.unwrap().starts_with("# PG101 dead-patch-target"));
        let r = rule_info(&codes::DRIFT.diagnostic("m"), None);
        assert_eq!((r.name.as_str(), r.help_uri), ("drift", None));
        let r = rule_info(&Diagnostic::new("PGM001", "moe-x", Severity::Warning, "m"), None);
        assert_eq!((r.code.as_str(), r.summary.as_str()), ("PGM001", "moe x"));
    }
}
