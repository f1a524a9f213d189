//! Where a diagnostic code's documentation is, for an editor's link
//! (`codeDescription.href`) and the `# noqa` hover: under a base URL the
//! client gives (`initializationOptions.docsUrl`, e.g. the repository's
//! `docs/rules/` on GitHub: `<base><CODE>.md`), else a file written once per
//! server from this binary's own documentation (the rule docs `patchgen
//! rule` prints; for the other codes their one-line summary), so the link
//! always matches the version that reported the finding.

use std::path::{Path, PathBuf};

use lsp_types::Url;
use patchgen_diagnostics::codes;

/// A code's documentation, in markdown.
pub fn markdown(code: &str) -> Option<String> {
    if let Some(rule) = patchgen_lint::rule(code).filter(|r| r.code.eq_ignore_ascii_case(code)) {
        return Some(patchgen_lint::docs::rule_markdown(rule));
    }
    let c = codes::ALL.iter().find(|c| c.code.eq_ignore_ascii_case(code))?;
    Some(format!(
        "# {} {}\n\n{}\n\nSeverity: {}. Every code: `docs/diagnostics.md`.\n",
        c.code,
        c.name,
        c.summary,
        c.severity.as_str()
    ))
}

/// The short form for a hover: `**CODE** name: summary`.
pub fn summary(code: &str) -> Option<String> {
    if let Some(rule) = patchgen_lint::rule(code).filter(|r| r.code.eq_ignore_ascii_case(code)) {
        return Some(format!("**{}** `{}`: {}", rule.code, rule.name, rule.summary()));
    }
    let c = codes::ALL.iter().find(|c| c.code.eq_ignore_ascii_case(code))?;
    Some(format!("**{}** `{}`: {}", c.code, c.name, c.summary))
}

/// Where the documentation links point.
pub struct DocLinks {
    base: Option<Url>,
    dir: PathBuf,
}

impl DocLinks {
    /// Links under `base` when given, else to files under `dir` (written on first use).
    pub fn new(base: Option<Url>, dir: PathBuf) -> DocLinks {
        DocLinks { base, dir }
    }

    /// The link for `code`, `None` for a code patchgen does not document.
    pub fn url(&self, code: &str) -> Option<Url> {
        let text = markdown(code)?;
        let code = code.to_ascii_uppercase();
        if let Some(base) = &self.base {
            return base.join(&format!("{code}.md")).ok();
        }
        let path = self.dir.join(format!("{code}.md"));
        write_if_changed(&path, &text)?;
        Url::from_file_path(&path).ok()
    }
}

fn write_if_changed(path: &Path, text: &str) -> Option<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Some(());
    }
    std::fs::create_dir_all(path.parent()?).ok()?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).ok()?;
    std::fs::rename(&tmp, path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_codes_have_docs_and_links() {
        assert!(markdown("PG301").unwrap().starts_with("# PG301 logits-to-keep-order"));
        assert!(summary("pg301").unwrap().starts_with("**PG301** `logits-to-keep-order`: "));
        assert!(markdown("PGW001").unwrap().contains("missing-target"));
        assert_eq!(markdown("F821"), None);
        let dir = tempfile::tempdir().unwrap();
        let links = DocLinks::new(None, dir.path().to_path_buf());
        let url = links.url("PG301").unwrap();
        let written = std::fs::read_to_string(url.to_file_path().unwrap()).unwrap();
        assert_eq!(written, markdown("PG301").unwrap());
        let base = Url::parse("https://example.org/docs/rules/").unwrap();
        assert_eq!(
            DocLinks::new(Some(base), dir.path().into()).url("PG301").unwrap().as_str(),
            "https://example.org/docs/rules/PG301.md"
        );
    }
}
