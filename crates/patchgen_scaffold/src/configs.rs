//! Phase 3 of `new`: one patch-gen config per backend — the template's
//! config for that backend evaluated, its patches retargeted onto the new
//! model (`retarget`, with the project's kernel slots and a `1 + weight`
//! norm donor found among the other configs only when needed), and the
//! config text rendered (`render`) with the template's licence, imports and
//! `PatchConfig` import. A backend the template has no config for is
//! skipped with a warning; none at all is an error.

use crate::report::{BackendPlan, PlannedFile};
use crate::retarget::{NormDonor, Retarget, Retargeted};
use crate::scan::{ProjectConfig, Scan};
use crate::template::Template;
use crate::{NewError, kernels, render};

/// The planned configs, their files, and what retargeting warned about.
pub(crate) struct Configs {
    pub(crate) plans: Vec<BackendPlan>,
    pub(crate) files: Vec<PlannedFile>,
    pub(crate) warnings: Vec<String>,
}

/// Plan a config for each backend of the request.
pub(crate) fn plan(scan: &Scan, template: &Template) -> Result<Configs, NewError> {
    let m = scan.model.as_str();
    let facts = &scan.facts;
    let partial_rotary = scan.configuration.as_ref().and_then(|c| c.partial_rotary());
    let donor = || norm_donor(scan, template.name.as_deref());
    // The OpSlot declarations of the project's configs (read, not evaluated),
    // and the rms_norm variant a config declares for its `1 + weight` norm.
    let config_texts: Vec<(String, &ProjectConfig)> =
        scan.configs.iter().filter_map(|c| Some((std::fs::read_to_string(&c.path).ok()?, c))).collect();
    let slots = kernels::ProjectSlots::scan(config_texts.iter().map(|(t, _)| t.as_str()));
    let one_plus_variant = || one_plus_variant(scan, &config_texts);
    let mut out = Configs { plans: Vec::new(), files: Vec::new(), warnings: Vec::new() };
    let any_config_text = scan.configs.first().and_then(|c| std::fs::read_to_string(&c.path).ok()).unwrap_or_default();
    for backend in &scan.backends {
        let module = format!("{}.{m}.{m}_{backend}_patch_gen_config", scan.project.settings.package_prefix);
        let path = scan.model_dir.join(format!("{m}_{backend}_patch_gen_config.py"));
        let template_config =
            template.name.as_ref().and_then(|t| scan.configs.iter().find(|c| &c.hf_name == t && &c.backend == backend));
        if template.name.is_some() && template_config.is_none() {
            out.warnings.push(format!("the template has no {backend} config: {backend} not written"));
            continue;
        }
        let (retargeted, template_text) = match (template_config, &template.facts) {
            (Some(tc), Some(tf)) => {
                let (plan, _, _) =
                    scan.ctx.evaluate(&tc.module, "config").map_err(|e| NewError::failed(e.to_string()))?;
                let mut r = Retarget {
                    template: &plan,
                    template_facts: tf,
                    new: facts,
                    version: &scan.version,
                    partial_rotary: partial_rotary.clone(),
                    norm_donor: &donor,
                    slots: &slots,
                    one_plus_variant: &one_plus_variant,
                }
                .run();
                port_differing(scan, template.name.as_deref().unwrap_or_default(), &mut r);
                (r, std::fs::read_to_string(&tc.path).unwrap_or_default())
            }
            _ => (Retargeted::default(), any_config_text.clone()),
        };
        let from = template_config.map(|c| c.module.clone());
        let head = head(scan, template, backend, &module, from.as_deref(), template_config.is_some(), &template_text);
        let text = render::config(&head, &retargeted);
        out.files.push(PlannedFile { path: path.clone(), what: format!("{backend} patch-gen config"), text });
        out.warnings.extend(retargeted.warnings.iter().cloned());
        out.plans.push(BackendPlan {
            backend: backend.clone(),
            module,
            template_config: from,
            inherited: Vec::new(),
            retargeted,
            head,
            path,
        });
    }
    if out.plans.is_empty() {
        return Err(NewError::failed(format!("no config to write: {}", out.warnings.join("; "))));
    }
    Ok(out)
}

/// Each carried patch whose upstream target is not the template's
/// (`Carried::differs`): copied and ported onto the new upstream instead of
/// reused (`port_copy`).
fn port_differing(scan: &Scan, template_hf: &str, r: &mut Retargeted) {
    for c in r.carried.iter_mut() {
        let Some(d) = c.differs.clone() else { continue };
        let from = match &c.defined_at {
            Some((path, line, _)) => format!("{}:{line}", scan.rel(path)),
            None => c.import_module.clone(),
        };
        let params = crate::port_copy::auto_docstring_params(&scan.facts.file, &c.target);
        let copy = crate::port_copy::ported(c, &d, &from, (template_hf, &scan.model), params.as_deref());
        let (reused, renamed) = (format!("the reused `{}`", c.import_name), format!("the copied `{}`", copy.name));
        for t in &mut c.todos {
            *t = t.replace(&reused, &renamed);
        }
        c.copy = Some(copy);
        // The copy lives in the new config now.
        c.defined_at = None;
    }
}

/// The config's head: title, regeneration command, imports and the
/// `PatchConfig` arguments (`from`: the template config's module; `reuse`:
/// the template has a config for this backend, whose imports are kept).
fn head(
    scan: &Scan,
    template: &Template,
    backend: &str,
    module: &str,
    from: Option<&str>,
    reuse: bool,
    template_text: &str,
) -> render::ConfigHead {
    let m = scan.model.as_str();
    let prefix = &scan.facts.prefix;
    let out_dir = scan.model_dir.join("generated");
    let title = match from {
        Some(t) => format!(
            "Patch configuration for {prefix} ({}), scaffolded by `patchgen new` from {t}.",
            backend.to_uppercase()
        ),
        None => format!(
            "Patch configuration for {prefix} ({}), scaffolded by `patchgen new` (no project template for {}: add the protocol's common patches).",
            backend.to_uppercase(),
            scan.category.as_str()
        ),
    };
    let description = match &template.name {
        Some(t) => format!("{prefix} reusing the {t} patches"),
        None => format!("{prefix} (scaffold)"),
    };
    render::ConfigHead {
        template_imports: if reuse { top_level_imports(template_text) } else { Vec::new() },
        licence: licence(template_text),
        title,
        regen: format!("patchgen {module} -o {} --diff", scan.rel(&out_dir)),
        patch_config_import: patch_config_import(template_text)
            .unwrap_or_else(|| "from patchgen import PatchConfig".into()),
        source_module: scan.facts.module.clone(),
        target_file: format!("patched_modeling_{m}_{backend}.py"),
        description,
    }
}

/// A `1 + weight` RMSNorm replacement in another GPU config of the project
/// (not the template's), with the OpSlot declaration its config makes.
fn norm_donor(scan: &Scan, template: Option<&str>) -> Option<NormDonor> {
    for c in scan.configs.iter().filter(|c| c.backend == "gpu" && Some(c.hf_name.as_str()) != template) {
        let Ok(f) = scan.facts_of(&c.hf_name) else {
            continue;
        };
        let norms = [format!("{}RMSNorm", f.prefix), format!("{}TextRMSNorm", f.prefix)];
        let Some(norm) = norms.iter().find(|n| f.norm_is_one_plus_weight(&scan.version, n).is_some()) else {
            continue;
        };
        let Ok((plan, _, _)) = scan.ctx.evaluate(&c.module, "config") else {
            continue;
        };
        let target = format!("{norm}.forward");
        if let Some(p) = plan.patches.iter().find(|p| p.target == target && p.replacement.is_some()) {
            return Some(NormDonor {
                config_module: c.module.clone(),
                source_module: plan.source_module.clone(),
                prefix: f.prefix.clone(),
                patch: p.clone(),
                opslot_variant: rms_norm_variant(&plan.post_import_blocks),
                opslot_lines: opslot_lines(&plan.post_import_blocks),
            });
        }
    }
    None
}

/// The non-standard `rms_norm` OpSlot variant a project config declares for
/// a model whose norm is `1 + weight`.
fn one_plus_variant(scan: &Scan, config_texts: &[(String, &ProjectConfig)]) -> Option<String> {
    config_texts.iter().find_map(|(text, c)| {
        let s = kernels::ProjectSlots::scan([text.as_str()]);
        let variant = s.decls.iter().find(|d| d.op == "rms_norm" && d.variant != "standard")?.variant.clone();
        let f = scan.facts_of(&c.hf_name).ok()?;
        [format!("{}RMSNorm", f.prefix), format!("{}TextRMSNorm", f.prefix)]
            .iter()
            .any(|n| f.norm_is_one_plus_weight(&scan.version, n).is_some())
            .then_some(variant)
    })
}

/// The leading `#` comment block of a file (its licence header).
pub(crate) fn licence(text: &str) -> String {
    let lines: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
    if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" }
}

/// `from X import PatchConfig` as the template writes it.
fn patch_config_import(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("from ")?;
        let (module, names) = rest.split_once(" import ")?;
        names.contains("PatchConfig").then(|| format!("from {} import PatchConfig", module.trim()))
    })
}

/// The top-level `import`/`from … import` statements of a config (the
/// `PatchConfig` import aside), as written.
fn top_level_imports(text: &str) -> Vec<String> {
    use ruff_text_size::Ranged;
    let Ok(parsed) = ruff_python_parser::parse_module(text) else {
        return Vec::new();
    };
    parsed
        .syntax()
        .body
        .iter()
        .filter(|s| matches!(s, ruff_python_ast::Stmt::Import(_) | ruff_python_ast::Stmt::ImportFrom(_)))
        .map(|s| text[s.range()].to_string())
        .filter(|s| !s.contains("PatchConfig"))
        .collect()
}

/// The line importing `OpSlot` and the line declaring the `rms_norm` slot
/// in a plan's post-import blocks, stripped.
fn opslot_lines(blocks: &[String]) -> Option<(String, String)> {
    let line =
        |pat: &str| blocks.iter().flat_map(|b| b.lines()).map(str::trim).find(|l| l.contains(pat)).map(str::to_string);
    Some((line("import OpSlot")?, line("OpSlot(\"rms_norm\"")?))
}

/// The `OpSlot("rms_norm", "<variant>")` a plan's post-import blocks declare.
fn rms_norm_variant(blocks: &[String]) -> Option<String> {
    let marker = "OpSlot(\"rms_norm\", \"";
    blocks.iter().find_map(|b| {
        let rest = &b[b.find(marker)? + marker.len()..];
        Some(rest[..rest.find('"')?].to_string())
    })
}
