//! Rule documentation as markdown: what `patchgen rule` prints and what
//! `docs/rules/` holds (one `<CODE>.md` per rule and a `README.md` index),
//! generated from each rule file's `//!` comment.

use super::{Rule, rules};

/// `# CODE name` + status line + the doc's sections.
pub fn rule_markdown(rule: &Rule) -> String {
    let doc = rule.doc_text();
    let mut lines = doc.lines();
    let summary = lines.next().unwrap_or_default();
    let summary = summary.split_once(": ").map(|(_, s)| s).unwrap_or(summary);
    let body: Vec<&str> = lines.collect();
    let body = body.join("\n");
    format!(
        "# {} {}\n\n{}\n\nDefault: {}. Severity: {}. Fix: {}.\n\n{}\n",
        rule.code,
        rule.name,
        summary,
        if rule.default_on { "on" } else { "off (enable with `--select`)" },
        rule.severity.as_str(),
        super::fix::availability(rule.code).describe(),
        body.trim()
    )
}

/// `docs/rules/README.md`: the table of rules.
pub fn index_markdown() -> String {
    let mut out = String::from(
        "# patchgen lint rules\n\nGenerated from the rule sources (`src/lint/rules/`); `patchgen rule CODE` prints the same text.\n\n| Code | Name | Default | Fix | Summary |\n|---|---|---|---|---|\n",
    );
    for r in rules::RULES {
        out.push_str(&format!(
            "| [{}]({}.md) | {} | {} | {} | {} |\n",
            r.code,
            r.code,
            r.name,
            if r.default_on { "on" } else { "off" },
            match super::fix::availability(r.code) {
                super::fix::Availability::Never => "",
                super::fix::Availability::Sometimes(super::fix::Applicability::Safe) => "safe",
                super::fix::Availability::Sometimes(_) => "unsafe",
            },
            r.summary()
        ));
    }
    out
}

/// Every file of `docs/rules/`: (file name, text).
pub fn files() -> Vec<(String, String)> {
    let mut out = vec![("README.md".to_string(), index_markdown())];
    out.extend(rules::RULES.iter().map(|r| (format!("{}.md", r.code), rule_markdown(r))));
    out
}
