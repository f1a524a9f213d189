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
//! The table is read, checked (unknown keys: file, line, nearest key) and
//! resolved with the environment and the flags by `patchgen_core::settings`
//! (`--select` > `PATCHGEN_LINT_SELECT` > `select`; `--extend-select` and
//! `--ignore` add to `PATCHGEN_LINT_EXTEND_SELECT`/`PATCHGEN_LINT_IGNORE`
//! and the file's lists); this module turns the result into what the rules use.

use patchgen_core::settings::LintOptions;

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
    /// PG106: attributes added to the framework list (`extend-framework-attrs`).
    pub extend_framework_attrs: Vec<String>,
}

impl LintSettings {
    /// The rule options of [`patchgen_core::settings::Resolved::lint`] (flags,
    /// environment and `[tool.patchgen.lint]` already resolved, unknown
    /// keys already refused); `package_prefix` gives the default
    /// first-party package.
    pub fn from_options(o: &LintOptions, package_prefix: &str) -> LintSettings {
        let mut hooks: Vec<String> = match &o.framework_hooks {
            Some(h) => h.clone(),
            None => DEFAULT_HOOKS.iter().map(|s| s.to_string()).collect(),
        };
        hooks.extend(o.extend_framework_hooks.iter().flatten().cloned());
        LintSettings {
            select: o.select.clone(),
            extend_select: o.extend_select.clone().unwrap_or_default(),
            ignore: o.ignore.clone().unwrap_or_default(),
            hooks,
            sibling_suffixes: o.sibling_suffixes.clone().unwrap_or_else(|| vec!["gpu".to_string(), "npu".to_string()]),
            first_party: o
                .first_party
                .clone()
                .unwrap_or_else(|| vec![package_prefix.split('.').next().unwrap_or(package_prefix).to_string()]),
            per_file_ignores: o.per_file_ignores.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect(),
            extend_framework_attrs: o.extend_framework_attrs.clone().unwrap_or_default(),
        }
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
        let text =
            "[tool.patchgen]\nsearch_root = \".\"\npackage_prefix = \"pkg\"\n[tool.patchgen.lint]\nselec = [\"PG1\"]\n";
        let err = patchgen_core::settings::Options::from_pyproject(std::path::Path::new("p.toml"), text).unwrap_err();
        assert!(err.to_string().contains("unknown key `selec`"), "{err}");
    }
}
