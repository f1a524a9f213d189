//! `--from`'s default: the project's pin, the version the checked-in
//! generated files name in their header (`#  Based on: transformers==X`).

use std::collections::BTreeMap;

use patchgen_core::error::RunError;
use patchgen_core::pipeline::{Context, default_output_dir};

const HEADER: &str = "Based on: transformers==";

/// The version named by the headers of the generated files of `modules`
/// (the one most of them name; an error when none names one).
pub fn from_headers(ctx: &Context, modules: &[String], config_name: &str) -> Result<String, RunError> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for module in modules {
        let Ok((plan, path, _)) = ctx.evaluate(module, config_name) else { continue };
        let py = default_output_dir(&path).join(&plan.target_file);
        let Ok(text) = std::fs::read_to_string(&py) else { continue };
        if let Some(v) = header_version(&text) {
            *seen.entry(v.to_string()).or_default() += 1;
        }
    }
    let best = seen.iter().max_by_key(|(_, n)| **n).map(|(v, _)| v.clone());
    best.ok_or_else(|| {
        RunError::Usage(
            "no generated file names its upstream version (`#  Based on: transformers==X`)\n  help: pass --from VERSION (or a wheel or directory)"
                .into(),
        )
    })
}

/// The `X` of the first `Based on: transformers==X` line.
pub fn header_version(text: &str) -> Option<&str> {
    text.lines().take(200).find_map(|l| {
        let at = l.find(HEADER)?;
        let v = l[at + HEADER.len()..].split_whitespace().next()?;
        (!v.is_empty()).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_version() {
        let text = "# header\n#  Based on: transformers==5.9.0\n";
        assert_eq!(super::header_version(text), Some("5.9.0"));
        assert_eq!(super::header_version("no header\n"), None);
    }
}
