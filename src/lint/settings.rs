//! `[tool.patchgen.lint]`: which rules run and their options.
//!
//! ```toml
//! [tool.patchgen.lint]
//! select = ["PG1", "PG2"]          # replaces the default-on set (prefixes allowed)
//! extend-select = ["PG501"]        # added to it
//! ignore = ["PG203"]
//! framework-hooks = ["dummy_forward"]          # PG102: replaces the default hook list
//! extend-framework-hooks = ["my_runtime_hook"] # PG102: added to it
//! sibling-suffixes = ["gpu", "npu"]            # PG202: `<m>_<first>_…` vs `<m>_<other>_…`
//! first-party = ["veomni"]                     # PG201: packages whose helpers are checked
//!
//! [tool.patchgen.lint.per-file-ignores]
//! "veomni/models/transformers/qwen3_5/*" = ["PG203"]
//! ```
//!
//! Flags (`--select`, `--ignore`, `--extend-select`) are applied after the file.

use std::path::Path;

/// The VeOmni runtime's hooks on model classes: methods injected on purpose
/// that nothing in the generated module calls (the trainer and data
/// pipeline do).
pub const DEFAULT_HOOKS: &[&str] = &[
    "dummy_forward",
    "get_position_id_func",
    "get_metadata_collate_func",
    "get_extra_collate_infos",
    "get_parallel_plan",
    "get_checkpoint_tensor_converter",
    "_create_checkpoint_tensor_converter",
    "_convert_fqn_to_index_mapping",
];

#[derive(Clone, Debug, Default)]
pub struct LintSettings {
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
    pub hooks: Vec<String>,
    pub sibling_suffixes: Vec<String>,
    pub first_party: Vec<String>,
    pub per_file_ignores: Vec<(String, Vec<String>)>,
}

fn strings(table: &toml::Table, key: &str, err: &dyn Fn(String) -> String) -> Result<Option<Vec<String>>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| err(format!("`{key}` must be a list of strings"))))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(err(format!("`{key}` must be a list of strings"))),
    }
}

const KNOWN: &[&str] = &[
    "select",
    "extend-select",
    "ignore",
    "framework-hooks",
    "extend-framework-hooks",
    "sibling-suffixes",
    "first-party",
    "per-file-ignores",
];

impl LintSettings {
    /// Read `[tool.patchgen.lint]` from `pyproject`; `package_prefix` gives
    /// the default first-party package.
    pub fn load(pyproject: &Path, package_prefix: &str) -> Result<LintSettings, String> {
        let text =
            std::fs::read_to_string(pyproject).map_err(|e| format!("{}: cannot read: {e}", pyproject.display()))?;
        let doc: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("{}: invalid TOML: {}", pyproject.display(), e.message()))?;
        let table = doc.get("tool").and_then(|t| t.get("patchgen")).and_then(|t| t.get("lint"));
        let empty = toml::Table::new();
        let table = match table {
            None => &empty,
            Some(toml::Value::Table(t)) => t,
            Some(_) => {
                return Err(format!("{}: [tool.patchgen.lint] must be a table", pyproject.display()));
            }
        };
        Self::from_table(table, package_prefix).map_err(|m| format!("{}: {m}", pyproject.display()))
    }

    pub fn from_table(table: &toml::Table, package_prefix: &str) -> Result<LintSettings, String> {
        let err = |m: String| format!("[tool.patchgen.lint] {m}");
        if let Some(k) = table.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(err(format!("has an unknown key `{k}` (known: {})", KNOWN.join(", "))));
        }
        let mut hooks: Vec<String> = match strings(table, "framework-hooks", &err)? {
            Some(h) => h,
            None => DEFAULT_HOOKS.iter().map(|s| s.to_string()).collect(),
        };
        hooks.extend(strings(table, "extend-framework-hooks", &err)?.unwrap_or_default());
        let per_file_ignores = match table.get("per-file-ignores") {
            None => Vec::new(),
            Some(toml::Value::Table(t)) => t
                .iter()
                .map(|(k, v)| {
                    let codes = v
                        .as_array()
                        .and_then(|a| a.iter().map(|c| c.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                        .ok_or_else(|| err(format!("per-file-ignores `{k}` must be a list of codes")))?;
                    Ok((k.clone(), codes))
                })
                .collect::<Result<_, String>>()?,
            Some(_) => {
                return Err(err("`per-file-ignores` must be a table of glob = [codes]".into()));
            }
        };
        let first_party = strings(table, "first-party", &err)?
            .unwrap_or_else(|| vec![package_prefix.split('.').next().unwrap_or(package_prefix).to_string()]);
        Ok(LintSettings {
            select: strings(table, "select", &err)?,
            extend_select: strings(table, "extend-select", &err)?.unwrap_or_default(),
            ignore: strings(table, "ignore", &err)?.unwrap_or_default(),
            hooks,
            sibling_suffixes: strings(table, "sibling-suffixes", &err)?
                .unwrap_or_else(|| vec!["gpu".to_string(), "npu".to_string()]),
            first_party,
            per_file_ignores,
        })
    }

    /// Codes ignored for the file at `rel` (relative to the project root, `/`-separated).
    pub fn ignored_for(&self, rel: &str) -> Vec<&str> {
        self.per_file_ignores
            .iter()
            .filter(|(pattern, _)| glob_match(pattern, rel))
            .flat_map(|(_, codes)| codes.iter().map(String::as_str))
            .collect()
    }
}

/// Whether `code` is selected by `selector`: a full code, a prefix
/// (`PG1`, `PG`), `ALL`, or a rule name.
pub fn selects(selector: &str, code: &str, name: &str) -> bool {
    selector.eq_ignore_ascii_case("ALL")
        || selector == name
        || (code.len() >= selector.len() && code[..selector.len()].eq_ignore_ascii_case(selector))
}

/// Glob matching for per-file-ignores: `*` any run within one path
/// segment, `**` any run of segments, `?` one character. A pattern without
/// `/` matches the file name anywhere.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    if !pattern.contains('/') {
        let name = path.rsplit('/').next().unwrap_or(path);
        return glob_chars(pattern.as_bytes(), name.as_bytes()) || glob_chars(pattern.as_bytes(), path.as_bytes());
    }
    glob_chars(pattern.trim_start_matches("./").as_bytes(), path.as_bytes())
}

fn glob_chars(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => {
            let rest = p[2..].strip_prefix(b"/").unwrap_or(&p[2..]);
            (0..=s.len()).any(|i| (i == 0 || s[i - 1] == b'/') && glob_chars(rest, &s[i..])) || glob_chars(rest, s)
        }
        Some(b'*') => {
            let rest = &p[1..];
            for i in 0..=s.len() {
                if glob_chars(rest, &s[i..]) {
                    return true;
                }
                if i < s.len() && s[i] == b'/' {
                    break;
                }
            }
            false
        }
        Some(b'?') => !s.is_empty() && s[0] != b'/' && glob_chars(&p[1..], &s[1..]),
        Some(c) => s.first() == Some(c) && glob_chars(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("a/*/x.py", "a/b/x.py"));
        assert!(!glob_match("a/*/x.py", "a/b/c/x.py"));
        assert!(glob_match("a/**/x.py", "a/b/c/x.py"));
        assert!(glob_match("a/**/x.py", "a/x.py"));
        assert!(glob_match("*_npu_patch_gen_config.py", "pkg/m/m_npu_patch_gen_config.py"));
        assert!(glob_match("pkg/m/*", "pkg/m/m_gpu_patch_gen_config.py"));
        assert!(!glob_match("pkg/n/*", "pkg/m/m_gpu_patch_gen_config.py"));
    }

    #[test]
    fn selectors() {
        assert!(selects("PG1", "PG101", "dead-patch-target"));
        assert!(selects("pg101", "PG101", "dead-patch-target"));
        assert!(selects("ALL", "PG501", "patch-markers"));
        assert!(selects("dead-patch-target", "PG101", "dead-patch-target"));
        assert!(!selects("PG2", "PG101", "dead-patch-target"));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let t: toml::Table = "selec = [\"PG1\"]".parse().unwrap();
        assert!(LintSettings::from_table(&t, "pkg").unwrap_err().contains("unknown key `selec`"));
    }
}
