//! The process environment as a value: the binary takes one [`Env`]
//! snapshot at start ([`Env::capture`], the only place outside the binary
//! that reads the environment) and hands it to every library that needs a
//! variable: the `PATCHGEN_*` settings here, the Python search path
//! (`PYTHONPATH`, `VIRTUAL_ENV`), ruff's discovery (`PATH`, `HOME`,
//! `XDG_*`, `RUFF_*`, `$VAR` in its settings), the Hub and the object
//! stores (`HF_*`, `AWS_*`, `GOOGLE_*`, `AZURE_*`). Tests build their own
//! with [`Env::from_pairs`]; a library never sees more than it was given.
//!
//! Lookups mirror `std::env`: [`Env::var_os`] is `var_os` (set, maybe
//! empty), [`Env::var`] is `var(..).ok()` (set and UTF-8), [`Env::value`]
//! is what the settings read (set, UTF-8, not empty).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;

/// A snapshot of environment variables (cheap to clone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    vars: Arc<BTreeMap<OsString, OsString>>,
}

impl Env {
    /// The process environment now (called once, by the binary).
    pub fn capture() -> Env {
        Env { vars: Arc::new(std::env::vars_os().collect()) }
    }

    /// An environment holding exactly `pairs` (tests, embedders).
    pub fn from_pairs<K: Into<OsString>, V: Into<OsString>>(pairs: impl IntoIterator<Item = (K, V)>) -> Env {
        Env { vars: Arc::new(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect()) }
    }

    /// `std::env::var_os`: the value when set (possibly empty).
    pub fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// `std::env::var(..).ok()`: the value when set and valid UTF-8.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name)?.to_str()
    }

    /// A setting's value: set, UTF-8 and not empty (an empty value counts as unset).
    pub fn value(&self, name: &str) -> Option<String> {
        self.var(name).filter(|v| !v.is_empty()).map(str::to_string)
    }

    /// This environment without the variables `names`.
    pub fn without(&self, names: &[&str]) -> Env {
        let mut vars = (*self.vars).clone();
        vars.retain(|k, _| !names.iter().any(|n| k == OsStr::new(n)));
        Env { vars: Arc::new(vars) }
    }

    /// Every variable whose name starts with `prefix` and is UTF-8 (name
    /// and value), in name order.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.vars
            .iter()
            .filter_map(|(k, v)| Some((k.to_str()?, v.to_str()?)))
            .filter(move |(k, _)| k.starts_with(prefix))
    }

    /// Every variable whose name starts with `prefix`, lossily as text, in name order.
    pub fn with_prefix_lossy<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (String, String)> + 'a {
        self.vars
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
            .filter(move |(k, _)| k.starts_with(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_mirror_std_env() {
        let env = Env::from_pairs([("A", "1"), ("EMPTY", ""), ("RUFF_X", "y"), ("RUFF_A", "b")]);
        assert_eq!(env.var("A"), Some("1"));
        assert_eq!(env.var("EMPTY"), Some(""));
        assert_eq!(env.value("EMPTY"), None);
        assert_eq!(env.var_os("MISSING"), None);
        let ruff: Vec<_> = env.with_prefix("RUFF_").collect();
        assert_eq!(ruff, [("RUFF_A", "b"), ("RUFF_X", "y")]);
    }

    #[test]
    fn capture_is_the_process_environment() {
        let env = Env::capture();
        for (k, v) in std::env::vars_os() {
            if let Some(name) = k.to_str() {
                assert_eq!(env.var_os(name), Some(v.as_os_str()), "{name}");
            }
        }
    }
}
