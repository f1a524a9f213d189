//! From the evaluated `config` object to a `PatchPlan`: every field checked
//! for the type codegen needs, every replacement's source text extracted.

use super::eval::{EResult, EvalError, Evaluator, Warning, describe_origin};
use super::plan::*;
use super::source::object_source_with_leading_comments;
use super::value::*;

fn field_error(config: &ConfigObj, field: &str, expected: &str, got: &Value) -> EvalError {
    EvalError::new(
        config.created_at.clone(),
        format!("config.{field} must be {expected}, but it is {}", got.type_name()),
    )
    .with_help(describe_origin(got))
}

fn as_str(ev: &mut Evaluator, config: &ConfigObj, field: &str, v: &Value) -> EResult<String> {
    match ev.force(v.clone())? {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(field_error(config, field, "a string", &other)),
    }
}

fn as_opt_str(ev: &mut Evaluator, config: &ConfigObj, field: &str, v: &Value) -> EResult<Option<String>> {
    match ev.force(v.clone())? {
        Value::None => Ok(None),
        Value::Str(s) => Ok(Some(s.to_string())),
        other => Err(field_error(config, field, "a string or None", &other)),
    }
}

fn items(ev: &mut Evaluator, config: &ConfigObj, field: &str, v: &Value) -> EResult<Vec<Value>> {
    match ev.force(v.clone())? {
        Value::List(l) => Ok(l.borrow().clone()),
        Value::Tuple(t) => Ok(t.to_vec()),
        Value::Set(s) => Ok(s.borrow().clone()),
        other => Err(field_error(config, field, "a list", &other)),
    }
}

/// The source object for a function or class value (`None` where inspect
/// would fail).
fn source_object(ev: &mut Evaluator, v: &Value, warn_at: &Loc) -> EResult<Option<SourceObject>> {
    match ev.force(v.clone())? {
        Value::Def(def) => match object_source_with_leading_comments(&def) {
            Ok(found) => {
                // The plan's text grows with every registration (20,000
                // stacked `@config.add_helper` copy a 400 KB source each).
                ev.plan_text += found.text.len();
                if ev.plan_text > MAX_VALUE_SIZE {
                    return Err(EvalError::new(
                        def.loc.clone(),
                        format!(
                            "the sources this config registers add up to over {MAX_VALUE_SIZE} bytes (`{}` is {} bytes)",
                            def.name,
                            found.text.len()
                        ),
                    )
                    .with_help("register each function once; a patch config has no reason to copy this much source"));
                }
                Ok(Some(SourceObject {
                    name: def.name.clone(),
                    module: def.module.clone(),
                    source: found.text,
                    defined_at: def.loc.clone(),
                    first_line: found.first_line,
                    leading: found.leading,
                    code_line: found.code_line,
                    dedents_to_function: found.dedents_to_function,
                }))
            }
            Err(e) => {
                ev.warnings.push(Warning {
                    loc: def.loc.clone(),
                    message: format!("cannot find the source of `{}` as inspect would: {}", def.name, e.0),
                });
                Ok(Some(SourceObject {
                    name: def.name.clone(),
                    module: def.module.clone(),
                    source: String::new(),
                    defined_at: def.loc.clone(),
                    first_line: 0,
                    leading: 0,
                    code_line: 0,
                    dedents_to_function: false,
                }))
            }
        },
        other @ (Value::Opaque(_) | Value::Unknown(_) | Value::Module(_)) => Err(EvalError::new(
            warn_at.clone(),
            format!("patchgen needs the source of {}, which it cannot read statically", other.type_name()),
        )
        .with_help(describe_origin(&other))),
        _ => Ok(None),
    }
}

fn name_map(ev: &mut Evaluator, v: &Value, loc: &Loc) -> EResult<Option<Vec<(String, String)>>> {
    match ev.force(v.clone())? {
        Value::None => Ok(None),
        Value::Dict(d) => {
            let mut out = Vec::new();
            for (k, v) in d.borrow().iter() {
                match (k, v) {
                    (Value::Str(k), Value::Str(v)) => out.push((k.to_string(), v.to_string())),
                    _ => {
                        return Err(EvalError::new(loc.clone(), "name_map keys and values must be strings")
                            .with_help(describe_origin(if matches!(k, Value::Str(_)) { v } else { k })));
                    }
                }
            }
            // An empty dict is falsy: the reference skips it like None.
            Ok(if out.is_empty() { None } else { Some(out) })
        }
        other => Err(EvalError::new(loc.clone(), format!("name_map must be a dict, not {}", other.type_name()))
            .with_help(describe_origin(&other))),
    }
}

fn patch(ev: &mut Evaluator, config: &ConfigObj, v: &Value) -> EResult<Patch> {
    let Value::Patch(p) = ev.force(v.clone())? else {
        return Err(field_error(config, "patches", "a list of Patch objects", v));
    };
    let p = p.borrow().clone();
    let loc = p.loc.clone();
    let patch_type = match ev.force(p.patch_type.clone())? {
        Value::PatchType(t) => t,
        other => return Err(EvalError::new(loc, format!("patch_type must be a PatchType, not {}", other.type_name()))),
    };
    let target = match ev.force(p.target.clone())? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(EvalError::new(loc, format!("a patch target must be a string, not {}", other.type_name())));
        }
    };
    let replacement = source_object(ev, &p.replacement, &loc)?;
    let opt = |ev: &mut Evaluator, v: &Value, what: &str| -> EResult<Option<String>> {
        match ev.force(v.clone())? {
            Value::None => Ok(None),
            Value::Str(s) => Ok(Some(s.to_string())),
            other => {
                Err(EvalError::new(loc.clone(), format!("{what} must be a string or None, not {}", other.type_name())))
            }
        }
    };
    Ok(Patch {
        patch_type,
        target,
        replacement,
        source_module: opt(ev, &p.source_module, "source_module")?,
        description: opt(ev, &p.description, "description")?,
        replacement_source: opt(ev, &p.replacement_source, "replacement_source")?,
        name_map: name_map(ev, &p.name_map, &loc)?,
        registered_at: loc,
    })
}

fn import_spec(ev: &mut Evaluator, config: &ConfigObj, v: &Value) -> EResult<(ImportSpec, Loc)> {
    let Value::ImportSpec(s) = ev.force(v.clone())? else {
        return Err(field_error(config, "additional_imports", "a list of ImportSpec objects", v));
    };
    let s = s.borrow().clone();
    let module = as_str(ev, config, "additional_imports[].module", &s.module)?;
    let names = match ev.force(s.names.clone())? {
        Value::None => None,
        v @ (Value::List(_) | Value::Tuple(_)) => {
            let mut out = Vec::new();
            for n in items(ev, config, "additional_imports[].names", &v)? {
                out.push(as_str(ev, config, "additional_imports[].names[]", &n)?);
            }
            Some(out)
        }
        Value::Str(s) => Some(s.chars().map(|c| c.to_string()).collect()),
        other => return Err(field_error(config, "additional_imports[].names", "a list of strings", &other)),
    };
    let alias = as_opt_str(ev, config, "additional_imports[].alias", &s.alias)?;
    let is_from_import = match ev.force(s.is_from_import.clone())?.truthy() {
        Some(b) => b,
        None => return Err(field_error(config, "additional_imports[].is_from_import", "a bool", &s.is_from_import)),
    };
    Ok((ImportSpec { module, names, alias, is_from_import }, s.loc.clone()))
}

fn helper(ev: &mut Evaluator, config: &ConfigObj, v: &Value) -> EResult<Helper> {
    let object = source_object(ev, v, &config.created_at)?;
    if object.is_none() {
        ev.warnings.push(Warning {
            loc: config.created_at.clone(),
            message: format!("helper {} has no source; it is skipped (as the reference does)", v.type_name()),
        });
    }
    Ok(Helper { object })
}

pub(super) fn to_plan(ev: &mut Evaluator, config: &ConfigObj, config_module: &str) -> EResult<PatchPlan> {
    ev.plan_text = 0;
    let mut patches = Vec::new();
    for p in items(ev, config, "patches", &config.patches)? {
        patches.push(patch(ev, config, &p)?);
    }
    let mut additional_imports = Vec::new();
    let mut call_sites = CallSites {
        drops: config.call_sites.drops.clone(),
        excludes: config.call_sites.excludes.clone(),
        ..Default::default()
    };
    for s in items(ev, config, "additional_imports", &config.additional_imports)? {
        let (spec, loc) = import_spec(ev, config, &s)?;
        additional_imports.push(spec);
        call_sites.imports.push(loc);
    }
    let mut post_import_blocks = Vec::new();
    let mut block_sites: Vec<Option<&(String, Loc)>> = config.call_sites.blocks.iter().map(Some).collect();
    for b in items(ev, config, "post_import_blocks", &config.post_import_blocks)? {
        let block = as_str(ev, config, "post_import_blocks[]", &b)?;
        // The first call not yet used that added this text.
        let site = block_sites.iter_mut().find(|s| s.is_some_and(|(t, _)| *t == block)).and_then(Option::take);
        call_sites.blocks.push(site.map_or_else(|| config.created_at.clone(), |(_, l)| l.clone()));
        post_import_blocks.push(block);
    }
    let mut helpers = Vec::new();
    for h in items(ev, config, "helpers", &config.helpers)? {
        helpers.push(helper(ev, config, &h)?);
    }
    let mut positioned_helpers = Vec::new();
    for h in items(ev, config, "positioned_helpers", &config.positioned_helpers)? {
        let Value::PositionedHelper(ph) = ev.force(h.clone())? else {
            return Err(field_error(config, "positioned_helpers", "a list of PositionedHelper objects", &h));
        };
        let ph = ph.borrow().clone();
        positioned_helpers.push(PositionedHelper {
            target: as_str(ev, config, "positioned_helpers[].target", &ph.target)?,
            helper: helper(ev, config, &ph.helper)?,
            placement: as_str(ev, config, "positioned_helpers[].placement", &ph.placement)?,
        });
    }
    let mut drop_imported_names = std::collections::BTreeSet::new();
    for n in items(ev, config, "drop_imported_names", &config.drop_imported_names)? {
        drop_imported_names.insert(as_str(ev, config, "drop_imported_names[]", &n)?);
    }
    let mut exclude = Vec::new();
    for n in items(ev, config, "exclude", &config.exclude)? {
        exclude.push(as_str(ev, config, "exclude[]", &n)?);
    }
    let transformers_version = match ev.force(config.transformers_version.clone())? {
        Value::None => None,
        Value::Str(s) if s.is_empty() => None,
        Value::Str(s) => Some(s.to_string()),
        other => return Err(field_error(config, "transformers_version", "a string or None", &other)),
    };
    let optional = match ev.force(config.optional.clone())?.truthy() {
        Some(b) => b,
        None => return Err(field_error(config, "optional", "a bool", &config.optional)),
    };
    Ok(PatchPlan {
        optional,
        config_module: config_module.to_string(),
        config_path: config.created_at.path.clone(),
        created_at: config.created_at.clone(),
        source_module: as_str(ev, config, "source_module", &config.source_module)?,
        target_file: as_str(ev, config, "target_file", &config.target_file)?,
        description: as_str(ev, config, "description", &config.description)?,
        patches,
        additional_imports,
        post_import_blocks,
        helpers,
        positioned_helpers,
        drop_imported_names,
        exclude,
        transformers_version,
        call_sites,
    })
}
