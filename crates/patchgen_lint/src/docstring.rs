//! What transformers' docstring machinery (`auto_docstring`,
//! `parse_docstring`) reads in a docstring: the parameters it documents
//! (`name (type...):` lines) and whether it has a `Returns:` section.
//! PG303 checks and fixes with these; the scaffold writes the entries a
//! copied function needs with them (one reading, not two).

/// Whether a docstring documents at least one parameter the way
/// transformers' `parse_docstring` finds them: a line `name (type...):`.
pub fn documents_fields(doc: &str) -> bool {
    !documented_names(doc).is_empty()
}

/// The parameter names a docstring documents (`name (type...):` lines).
pub fn documented_names(doc: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in doc.lines() {
        let t = line.trim_start();
        let name_end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(t.len());
        if name_end == 0 {
            continue;
        }
        let rest = t[name_end..].trim_start();
        if rest.starts_with('(') && rest.contains("):") {
            out.push(&t[..name_end]);
        }
    }
    out
}

/// Whether a docstring has its own `Returns:` section (then the builder
/// never looks at the return annotation).
pub fn has_returns_section(doc: &str) -> bool {
    doc.lines().any(|l| l.trim_start().starts_with("Return"))
}
