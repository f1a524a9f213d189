//! Which upstream version a project is pinned to, in the protocol's order:
//! `--pin`, an exact `transformers==X` requirement in `pyproject.toml`
//! (dependencies, optional dependencies, dependency groups), the
//! `Based on: transformers==X` line of the generated files, the package
//! found on the search path.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A version and where it was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub version: String,
    /// `--pin`, `pyproject.toml [dependency-groups] transformers-stable`, …
    pub source: String,
}

/// `package==X` in one requirement string (`transformers==5.9.0`,
/// `transformers == 5.9.0 ; python_version>'3.9'`); `None` for ranges.
pub fn exact_requirement(requirement: &str, package: &str) -> Option<String> {
    let req = requirement.split(';').next()?.trim();
    let name_end =
        req.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(req.len());
    let name = &req[..name_end];
    let normalise = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    if normalise(name) != normalise(package) {
        return None;
    }
    let rest = req[name_end..].trim_start();
    let rest =
        rest.strip_prefix('[').map(|r| r.split_once(']').map(|(_, t)| t).unwrap_or("")).unwrap_or(rest).trim_start();
    let version = rest.strip_prefix("==")?.trim();
    let version = version.strip_prefix('=').unwrap_or(version);
    (!version.is_empty() && !version.contains([',', '*', ' '])).then(|| version.to_string())
}

/// The exact pin of `package` in a `pyproject.toml` document.
pub fn from_pyproject(doc: &toml::Table, package: &str) -> Option<(String, String)> {
    let strings = |v: &toml::Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
    };
    let mut candidates: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(project) = doc.get("project") {
        if let Some(deps) = project.get("dependencies") {
            candidates.push(("[project] dependencies".into(), strings(deps)));
        }
        if let Some(extras) = project.get("optional-dependencies").and_then(|e| e.as_table()) {
            for (name, deps) in extras {
                candidates.push((format!("[project.optional-dependencies] {name}"), strings(deps)));
            }
        }
    }
    if let Some(groups) = doc.get("dependency-groups").and_then(|g| g.as_table()) {
        for (name, deps) in groups {
            candidates.push((format!("[dependency-groups] {name}"), strings(deps)));
        }
    }
    candidates
        .into_iter()
        .find_map(|(place, reqs)| reqs.iter().find_map(|r| exact_requirement(r, package)).map(|v| (v, place)))
}

/// The version in a generated file's `Based on: transformers==X` line.
pub fn from_generated_header(text: &str, package: &str) -> Option<String> {
    let marker = format!("Based on: {package}==");
    text.lines().take(80).find_map(|l| {
        let rest = &l[l.find(&marker)? + marker.len()..];
        let v: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        (!v.is_empty() && v != "unknown").then_some(v)
    })
}

/// `generated/*.py` files under `root`, sorted, the ones under `prefer`
/// first.
fn generated_files(root: &Path, prefer: Option<&Path>) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "py")
                && p.parent().and_then(|d| d.file_name()).is_some_and(|n| n == "generated")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    if let Some(prefer) = prefer {
        out.sort_by_key(|p| !p.starts_with(prefer));
    }
    out
}

/// The project's pin (pyproject, then generated headers); `None` when
/// neither says.
pub fn project_pin(pyproject: &Path, search_root: &Path, model_dir: Option<&Path>, package: &str) -> Option<Pin> {
    if let Ok(text) = std::fs::read_to_string(pyproject)
        && let Ok(doc) = text.parse::<toml::Table>()
        && let Some((version, place)) = from_pyproject(&doc, package)
    {
        return Some(Pin { version, source: format!("{} {place}", pyproject.display()) });
    }
    for file in generated_files(search_root, model_dir) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Some(version) = from_generated_header(&text, package) {
            return Some(Pin { version, source: format!("{} (Based on: line)", file.display()) });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_requirements_only() {
        assert_eq!(exact_requirement("transformers==5.9.0", "transformers").as_deref(), Some("5.9.0"));
        assert_eq!(
            exact_requirement("transformers == 5.9.0 ; python_version > '3.9'", "transformers").as_deref(),
            Some("5.9.0")
        );
        assert_eq!(exact_requirement("transformers[torch]==5.16.1", "transformers").as_deref(), Some("5.16.1"));
        assert_eq!(exact_requirement("transformers>=5.9", "transformers"), None);
        assert_eq!(exact_requirement("transformers-stream==1.0", "transformers"), None);
        assert_eq!(exact_requirement("transformers==5.*", "transformers"), None);
    }

    #[test]
    fn pyproject_group_then_header() {
        let doc: toml::Table = "[project]\ndependencies = [\"torch\"]\n[dependency-groups]\ntransformers-stable = [\"transformers==5.9.0\"]\n"
            .parse()
            .unwrap();
        assert_eq!(
            from_pyproject(&doc, "transformers"),
            Some(("5.9.0".into(), "[dependency-groups] transformers-stable".into()))
        );
        assert_eq!(
            from_generated_header("# x\n#  Based on: transformers==5.16.1\n", "transformers").as_deref(),
            Some("5.16.1")
        );
        assert_eq!(from_generated_header("# Based on: transformers==unknown\n", "transformers"), None);
    }
}
