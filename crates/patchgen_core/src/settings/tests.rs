use std::path::{Path, PathBuf};

use super::*;
use patchgen_diagnostics::Format;

const BASE: &str = "[project]\nname = \"x\"\n\n[tool.patchgen]\nsearch_root = \"pkg\"\npackage_prefix = \"pkg\"\n";

fn parse(text: &str) -> Result<Option<Options>, SettingsError> {
    Options::from_pyproject(Path::new("/p/pyproject.toml"), text)
}

fn project(extra: &str) -> Project {
    let options = parse(&format!("{BASE}{extra}")).unwrap().unwrap();
    let settings = project_settings(Path::new("/p/pyproject.toml"), Path::new("/p"), options).unwrap();
    Project { pyproject: "/p/pyproject.toml".into(), root: "/p".into(), settings }
}

fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_pairs(pairs.iter().copied())
}

#[test]
fn no_section_is_none() {
    assert_eq!(parse("[project]\nname = \"x\"\n[tool.ruff]\nline-length = 1\n"), Ok(None));
}

#[test]
fn reference_keys_and_ours() {
    let text = format!(
        "{BASE}legacy_patches_prefix = \"pkg.q.patches\"\nruff_extra_ignore = [\"E501\"]\nruff_isolated = true\nruff = \"bin/ruff\"\ncache-dir = \".pgcache\"\n\n[tool.patchgen.lint]\nselect = [\"PG1\"]\nignore = [\"PG101\"]\nextend-select = [\"PG3\"]\n\n[tool.patchgen.lint.per-file-ignores]\n\"pkg/legacy/*.py\" = [\"PG2\"]\n"
    );
    let o = parse(&text).unwrap().unwrap();
    assert_eq!(o.legacy_patches_prefix.as_deref(), Some("pkg.q.patches"));
    assert_eq!(o.ruff_extra_ignore, Some(vec!["E501".to_string()]));
    assert_eq!(o.ruff_isolated, Some(true));
    let lint = o.lint.clone().unwrap();
    assert_eq!(lint.select, Some(vec!["PG1".to_string()]));
    assert_eq!(lint.ignore, Some(vec!["PG101".to_string()]));
    assert_eq!(lint.extend_select, Some(vec!["PG3".to_string()]));
    assert_eq!(lint.per_file_ignores.unwrap()["pkg/legacy/*.py"], vec!["PG2".to_string()]);
    let s = project_settings(Path::new("/p/pyproject.toml"), Path::new("/p"), o).unwrap();
    assert_eq!(s.ruff, Some(PathBuf::from("/p/bin/ruff")));
    assert_eq!(s.cache_dir, Some(PathBuf::from("/p/.pgcache")));
    assert!(s.ruff_isolated);
}

#[test]
fn unknown_key_names_key_file_line_and_nearest() {
    let err = parse(&format!("{BASE}ruff_isolate = true\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/p/pyproject.toml:7: unknown key `ruff_isolate` in [tool.patchgen]\n  help: did you mean `ruff_isolated`? (known keys: search_root, package_prefix, legacy_patches_prefix, ruff_extra_ignore, ruff_isolated, ruff, cache-dir, reference-dir, max-file-size, lint)"
    );
    let err = parse(&format!("{BASE}\n[tool.patchgen.lint]\nselct = []\n")).unwrap_err();
    assert!(
        matches!(&err, SettingsError::UnknownKey { line: 9, key, table: "tool.patchgen.lint", .. } if key == "selct"),
        "{err}"
    );
    assert!(err.to_string().contains("did you mean `select`?"), "{err}");
    // Nothing close: the known keys only.
    let err = parse(&format!("{BASE}zzzzzzzzzz = 1\n")).unwrap_err();
    assert!(err.to_string().contains("help: known keys: search_root"), "{err}");
}

#[test]
fn wrong_type_names_key_and_line() {
    let err = parse(&format!("{BASE}ruff_isolated = \"yes\"\n")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("/p/pyproject.toml:7: [tool.patchgen] `ruff_isolated`: "), "{msg}");
    let err = parse("[tool.patchgen\nsearch_root = 1\n").unwrap_err();
    assert!(err.to_string().starts_with("/p/pyproject.toml:1: invalid TOML"), "{err}");
}

#[test]
fn missing_required_key() {
    let o = parse("[tool.patchgen]\nsearch_root = \"pkg\"\n").unwrap().unwrap();
    let err = project_settings(Path::new("/p/pyproject.toml"), Path::new("/p"), o).unwrap_err();
    assert!(err.to_string().contains("missing required key 'package_prefix'"), "{}", err.to_string());
}

#[test]
fn ruff_flag_then_env_then_pyproject_then_path() {
    let p = project("ruff = \"/opt/ruff\"\n");
    let none = env(&[]);
    let set = env(&[("PATCHGEN_RUFF", "/env/ruff")]);
    assert_eq!(ruff(Some(Path::new("/cli/ruff")), &set, &p).unwrap().program, PathBuf::from("/cli/ruff"));
    assert_eq!(ruff(None, &set, &p).unwrap().program, PathBuf::from("/env/ruff"));
    assert_eq!(ruff(None, &none, &p).unwrap().program, PathBuf::from("/opt/ruff"));
    assert_eq!(ruff(None, &none, &project("")).unwrap().program, PathBuf::from("ruff"));
}

#[test]
fn ruff_flags_from_env_or_pyproject() {
    let p = project("ruff_extra_ignore = [\"E501\"]\nruff_isolated = true\n");
    let r = ruff(None, &env(&[]), &p).unwrap();
    assert_eq!((r.extra_ignore, r.isolated), (vec!["E501".to_string()], true));
    let r = ruff(None, &env(&[("PATCHGEN_RUFF_ISOLATED", "false"), ("PATCHGEN_RUFF_EXTRA_IGNORE", "F401, E731")]), &p)
        .unwrap();
    assert_eq!((r.extra_ignore, r.isolated), (vec!["F401".to_string(), "E731".to_string()], false));
    let err = ruff(None, &env(&[("PATCHGEN_RUFF_ISOLATED", "maybe")]), &p).unwrap_err();
    assert_eq!(err.to_string(), "PATCHGEN_RUFF_ISOLATED=maybe: expected true or false");
}

#[test]
fn jobs_format_cache_dir_precedence() {
    let p = project("cache-dir = \"/c/py\"\n");
    let e = env(&[("PATCHGEN_JOBS", "3"), ("PATCHGEN_OUTPUT_FORMAT", "github"), ("PATCHGEN_CACHE_DIR", "/c/env")]);
    let r = Resolved::resolve(&Overrides::default(), &e, &p).unwrap();
    assert_eq!((r.jobs, r.format, r.cache_dir), (Some(3), Format::Github, Some(PathBuf::from("/c/env"))));
    let cli = Overrides { jobs: Some(1), format: Some(Format::Json), ruff: None, no_cache: false };
    let r = Resolved::resolve(&cli, &e, &p).unwrap();
    assert_eq!((r.jobs, r.format), (Some(1), Format::Json));
    let r = Resolved::resolve(&Overrides::default(), &env(&[]), &p).unwrap();
    assert_eq!((r.jobs, r.format, r.cache_dir), (None, Format::Text, Some(PathBuf::from("/c/py"))));
    assert!(Resolved::resolve(&Overrides::default(), &env(&[("PATCHGEN_JOBS", "many")]), &p).is_err());
}

#[test]
fn nearest_key() {
    assert_eq!(nearest("search-root", &KEYS), Some("search_root"));
    assert_eq!(nearest("cache_dir", &KEYS), Some("cache-dir"));
    assert_eq!(nearest("perfile-ignores", &LINT_KEYS), Some("per-file-ignores"));
    assert_eq!(nearest("colour", &KEYS), None);
}

#[test]
fn lint_selection_flag_env_pyproject() {
    let p = project("\n[tool.patchgen.lint]\nselect = [\"PG1\"]\nignore = [\"PG101\"]\nextend-select = [\"PG3\"]\n");
    let none = LintFlags::default();
    // pyproject alone
    let r = Resolved::resolve(&Overrides::default(), &env(&[]), &p).unwrap().with_lint_flags(&none);
    assert_eq!(r.lint.select, Some(vec!["PG1".to_string()]));
    // the environment replaces `select` and adds to the lists
    let e = env(&[
        ("PATCHGEN_LINT_SELECT", "PG2, PG4"),
        ("PATCHGEN_LINT_IGNORE", "PG203"),
        ("PATCHGEN_LINT_EXTEND_SELECT", "PG501"),
    ]);
    let r = Resolved::resolve(&Overrides::default(), &e, &p).unwrap().with_lint_flags(&none);
    assert_eq!(r.lint.select, Some(vec!["PG2".to_string(), "PG4".to_string()]));
    assert_eq!(r.lint.ignore, Some(vec!["PG101".to_string(), "PG203".to_string()]));
    assert_eq!(r.lint.extend_select, Some(vec!["PG3".to_string(), "PG501".to_string()]));
    // the flags win over both (select) and add last (lists)
    let flags = LintFlags { select: Some(vec!["PG5".into()]), extend_select: vec![], ignore: vec!["PG502".into()] };
    let r = Resolved::resolve(&Overrides::default(), &e, &p).unwrap().with_lint_flags(&flags);
    assert_eq!(r.lint.select, Some(vec!["PG5".to_string()]));
    assert_eq!(r.lint.ignore, Some(vec!["PG101".to_string(), "PG203".to_string(), "PG502".to_string()]));
}
