//! The text of the files `patchgen new` writes: the patch-gen config (reuse
//! imports, the template's `add_import`/post-import blocks, one DSL call
//! per carried patch under its `# Patch:` header, the exceptions as
//! comments); the model package's `__init__.py` is `super::init`.

use std::fmt::Write;

use super::pg301_copy::Copied;
use super::retarget::{Carried, Helper, Retargeted};
use patchgen_core::codegen::text::apply_name_map;

/// A Python string literal (JSON's escapes are Python's).
pub fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// What the config's head says.
#[derive(Clone, Debug, Default)]
pub struct ConfigHead {
    /// The template file's leading comment block (licence), verbatim.
    pub licence: String,
    pub title: String,
    pub regen: String,
    /// `from X import PatchConfig`.
    pub patch_config_import: String,
    /// The template config's own top-level imports (what copied helpers
    /// may need; ruff's fix drops the unused ones).
    pub template_imports: Vec<String>,
    pub source_module: String,
    pub target_file: String,
    pub description: String,
}

fn render_call(out: &mut String, c: &Carried, alias: &str, shared_map: Option<&[(String, String)]>) {
    for l in &c.header {
        let _ = writeln!(out, "{l}");
    }
    for n in &c.notes {
        let _ = writeln!(out, "# patchgen new: {n}");
    }
    for t in &c.todos {
        let _ = writeln!(out, "# {t}");
    }
    let _ = writeln!(out, "config.{}(", c.patch_type.dsl_method());
    let _ = writeln!(out, "    {},", py_str(&c.target));
    let _ = writeln!(out, "    replacement={alias},");
    if shared_map == Some(&c.name_map[..]) {
        let _ = writeln!(out, "    name_map=_NAME_MAP,");
    } else if !c.name_map.is_empty() {
        let _ = writeln!(out, "    name_map={},", dict(&c.name_map));
    }
    if let Some(d) = &c.description {
        let _ = writeln!(out, "    description={},", py_str(d));
    }
    let _ = writeln!(out, ")\n");
}

/// A carried replacement written out (`super::pg301_copy`): its header,
/// notes and TODOs, why it is a copy, then the decorated function.
fn render_copy(out: &mut String, c: &Carried, copy: &Copied) {
    // Renamed as generation renames a reused replacement's comments.
    for l in &c.header {
        let _ = writeln!(out, "{}", apply_name_map(l, Some(&c.name_map)));
    }
    for n in &c.notes {
        let _ = writeln!(out, "# patchgen new: {n}");
    }
    for t in &c.todos {
        let _ = writeln!(out, "# {t}");
    }
    for l in wrap(&copy.note, 100) {
        let _ = writeln!(out, "# {l}");
    }
    let _ = writeln!(out, "@config.{}(", c.patch_type.dsl_method());
    let _ = writeln!(out, "    {},", py_str(&c.target));
    if let Some(d) = &c.description {
        let _ = writeln!(out, "    description={},", py_str(d));
    }
    let _ = writeln!(out, ")\n{}\n\n", copy.source.trim_end());
}

/// `text` in lines of at most `width` characters (words kept whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn dict(map: &[(String, String)]) -> String {
    let items: Vec<String> = map.iter().map(|(k, v)| format!("{}: {}", py_str(k), py_str(v))).collect();
    format!("{{{}}}", items.join(", "))
}

/// A triple-quoted block, indented by four spaces.
fn block_literal(text: &str) -> String {
    let body = patchgen_python::pytext::dedent(text);
    let body = body.trim_matches('\n').replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let mut out = String::from("    \"\"\"\n");
    for line in body.lines() {
        if line.trim().is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    out.push_str("    \"\"\"");
    out
}

/// The patch-gen config.
pub fn config(head: &ConfigHead, r: &Retargeted) -> String {
    let mut out = String::new();
    if !head.licence.is_empty() {
        out.push_str(head.licence.trim_end());
        out.push('\n');
    }
    let _ = writeln!(out, "\"\"\"\n{}\n\nRegen command:\n{}\n\"\"\"\n", head.title, head.regen);
    // Reuse imports, grouped by module, names aliased when they clash.
    let mut aliases: Vec<String> = Vec::new();
    let mut by_module: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut taken: Vec<(String, String, String)> = Vec::new(); // (module, name, alias)
    let mut import = |module: &str, name: &str| -> String {
        if let Some((_, _, a)) = taken.iter().find(|(m, n, _)| m == module && n == name) {
            return a.clone();
        }
        let mut alias = name.to_string();
        let mut i = 2;
        while taken.iter().any(|(_, _, a)| *a == alias) {
            alias = format!("{name}_{i}");
            i += 1;
        }
        taken.push((module.to_string(), name.to_string(), alias.clone()));
        match by_module.iter_mut().find(|(m, _)| m == module) {
            Some((_, names)) => names.push((name.to_string(), alias.clone())),
            None => by_module.push((module.to_string(), vec![(name.to_string(), alias.clone())])),
        }
        alias
    };
    for c in &r.carried {
        // A copy is written below, not imported.
        aliases.push(if c.copy.is_some() { String::new() } else { import(&c.import_module, &c.import_name) });
    }
    let helper_aliases: Vec<Option<String>> = r
        .helpers
        .iter()
        .map(|h| match h {
            Helper::Import { module, name } => Some(import(module, name)),
            Helper::Copy { .. } => None,
        })
        .collect();
    for (module, names) in &by_module {
        let _ = writeln!(out, "from {module} import (");
        for (n, a) in names {
            if n == a {
                let _ = writeln!(out, "    {n},");
            } else {
                let _ = writeln!(out, "    {n} as {a},");
            }
        }
        let _ = writeln!(out, ")");
    }
    for stmt in head.template_imports.iter().chain(r.upstream_overrides.iter().flat_map(|o| &o.imports)) {
        let _ = writeln!(out, "{stmt}");
    }
    let _ = writeln!(out, "{}\n\n", head.patch_config_import);
    let _ = writeln!(
        out,
        "config = PatchConfig(\n    source_module={},\n    target_file={},\n    description={},\n)\n",
        py_str(&head.source_module),
        py_str(&head.target_file),
        py_str(&head.description)
    );
    if !r.exception_comments.is_empty() {
        let _ = writeln!(out, "# Protocol exceptions applied by patchgen new:");
        for c in &r.exception_comments {
            let _ = writeln!(out, "# - {c}");
        }
        out.push('\n');
    }
    for spec in &r.imports {
        let mut args = vec![py_str(&spec.module)];
        if let Some(names) = &spec.names {
            args.push(format!("names=[{}]", names.iter().map(|n| py_str(n)).collect::<Vec<_>>().join(", ")));
        }
        if let Some(a) = &spec.alias {
            args.push(format!("alias={}", py_str(a)));
        }
        if !spec.is_from_import {
            args.push("is_from_import=False".into());
        }
        let _ = writeln!(out, "config.add_import({})", args.join(", "));
    }
    for b in &r.post_import_blocks {
        let _ = writeln!(out, "config.add_post_import_block(\n{}\n)", block_literal(b));
    }
    if !r.drop_import_names.is_empty() {
        let names: Vec<String> = r.drop_import_names.iter().map(|n| py_str(n)).collect();
        let _ = writeln!(out, "config.drop_import_names({})", names.join(", "));
    }
    for (h, alias) in r.helpers.iter().zip(&helper_aliases) {
        match (h, alias) {
            (_, Some(a)) => {
                let _ = writeln!(out, "config.add_helper({a})");
            }
            (Helper::Copy { source, .. }, None) => {
                let _ = writeln!(out, "\n\n@config.add_helper\n{}\n\n", source.trim_end());
            }
            (Helper::Import { .. }, None) => {}
        }
    }
    if !r.exclude.is_empty() {
        let names: Vec<String> = r.exclude.iter().map(|n| py_str(n)).collect();
        let _ = writeln!(out, "config.exclude_from_output({})", names.join(", "));
    }
    out.push('\n');
    // The most common name map is shared.
    let shared = r
        .carried
        .iter()
        .filter(|c| c.copy.is_none())
        .map(|c| &c.name_map)
        .filter(|m| !m.is_empty())
        .max_by_key(|m| r.carried.iter().filter(|c| c.copy.is_none() && &c.name_map == *m).count())
        .cloned();
    if let Some(m) = &shared {
        let _ = writeln!(out, "_NAME_MAP = {}\n\n", dict(m));
    }
    for (c, alias) in r.carried.iter().zip(&aliases) {
        match &c.copy {
            Some(copy) => render_copy(&mut out, c, copy),
            None => render_call(&mut out, c, alias, shared.as_deref()),
        }
    }
    for o in &r.upstream_overrides {
        let _ = writeln!(out, "# Patch: {}\n# {}", o.target, o.todo);
        let _ = writeln!(
            out,
            "@config.{}(\n    {},\n    description={},\n)\n{}\n\n",
            o.patch_type,
            py_str(&o.target),
            py_str(&o.description),
            o.source.trim_end()
        );
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_wrap_on_words() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("a-very-long-word b", 4), ["a-very-long-word", "b"]);
    }

    #[test]
    fn blocks_keep_their_text() {
        assert_eq!(
            block_literal("\n    a = 1\n\n    b = \"\\n\"\n"),
            "    \"\"\"\n    a = 1\n\n    b = \"\\\\n\"\n    \"\"\""
        );
    }
}
