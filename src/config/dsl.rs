//! The patch DSL, statically: `PatchConfig(...)` and its methods,
//! `create_patch_from_external`, and the few builtins configs use. Each
//! method registers exactly what the reference's `patch_spec.py` registers,
//! including its defaults for descriptions.

use std::rc::Rc;

use super::eval::{EResult, EvalError, Evaluator, Frame, describe_origin, opaque};
use super::objects::{closest, set_add};
use super::plan::{Loc, PatchType};
use super::value::*;

/// Bind call arguments to a Python signature: `params` in order, each with
/// whether it has a default. Returns one slot per parameter.
fn bind(
    func: &str,
    params: &[(&str, bool)],
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    loc: &Loc,
) -> EResult<Vec<Option<Value>>> {
    let mut slots: Vec<Option<Value>> = vec![None; params.len()];
    if args.len() > params.len() {
        return Err(EvalError::new(
            loc.clone(),
            format!("`{func}()` takes at most {} positional arguments ({} given)", params.len(), args.len()),
        ));
    }
    for (i, a) in args.into_iter().enumerate() {
        slots[i] = Some(a);
    }
    for (name, v) in kwargs {
        match params.iter().position(|(p, _)| *p == name) {
            Some(i) => {
                if slots[i].is_some() {
                    return Err(EvalError::new(loc.clone(), format!("`{func}()` got multiple values for `{name}`")));
                }
                slots[i] = Some(v);
            }
            None => {
                let names: Vec<&str> = params.iter().map(|(p, _)| *p).collect();
                let err =
                    EvalError::new(loc.clone(), format!("`{func}()` got an unexpected keyword argument `{name}`"));
                return Err(match closest(&name, &names) {
                    Some(s) => err.with_help(format!("did you mean `{s}=`?")),
                    None => err.with_help(format!("`{func}` takes: {}", names.join(", "))),
                });
            }
        }
    }
    for (i, (p, has_default)) in params.iter().enumerate() {
        if slots[i].is_none() && !has_default {
            return Err(EvalError::new(loc.clone(), format!("`{func}()` is missing the required argument `{p}`")));
        }
    }
    Ok(slots)
}

fn or_none(v: Option<Value>) -> Value {
    v.unwrap_or(Value::None)
}

/// A value the DSL needs as a string.
pub(super) fn need_str(ev: &mut Evaluator, v: Value, what: &str, loc: &Loc) -> EResult<Rc<str>> {
    match ev.force(v)? {
        Value::Str(s) => Ok(s),
        other => Err(EvalError::new(
            loc.clone(),
            format!("{what} must be a string known statically, but it is {}", other.type_name()),
        )
        .with_help(describe_origin(&other))),
    }
}

/// A value the DSL needs as a function or class patchgen can read.
fn need_def(ev: &mut Evaluator, v: Value, what: &str, loc: &Loc) -> EResult<Value> {
    let v = ev.force(v)?;
    match v {
        Value::Def(_) => Ok(v),
        other => Err(EvalError::new(
            loc.clone(),
            format!("{what} must be a function or class defined in a project module, but it is {}", other.type_name()),
        )
        .with_help(format!(
            "{}; patchgen copies the replacement's source text, so define it in the config (or another config) — for a class from another package, use `create_patch_from_external`",
            describe_origin(&other)
        ))),
    }
}

fn def_name(v: &Value) -> String {
    match v {
        Value::Def(d) => d.name.clone(),
        _ => String::new(),
    }
}

fn def_module(v: &Value) -> Value {
    match v {
        Value::Def(d) => Value::str(&d.module),
        _ => Value::None,
    }
}

fn new_patch(
    patch_type: PatchType,
    target: Value,
    replacement: Value,
    source_module: Value,
    description: Value,
    name_map: Value,
    loc: &Loc,
) -> Value {
    Value::Patch(shared(PatchObj {
        patch_type: Value::PatchType(patch_type),
        target,
        replacement,
        source_module,
        description,
        replacement_source: Value::None,
        name_map,
        loc: loc.clone(),
    }))
}

fn push(list: &Value, item: Value, field: &str, loc: &Loc) -> EResult<()> {
    match list {
        Value::List(l) => {
            l.borrow_mut().push(item);
            Ok(())
        }
        other => Err(EvalError::new(loc.clone(), format!("config.{field} is {}, not a list", other.type_name()))),
    }
}

/// `description or f"..."`: the user's description when truthy, else the default.
fn description_or(ev: &mut Evaluator, description: Option<Value>, default: String, loc: &Loc) -> EResult<Value> {
    let d = ev.force(or_none(description))?;
    match d.truthy() {
        Some(true) => Ok(d),
        Some(false) => Ok(Value::str(&default)),
        None => Err(EvalError::new(loc.clone(), "description must be known statically").with_help(describe_origin(&d))),
    }
}

fn kind_of(name: &str) -> Option<(DecoratorKind, PatchType)> {
    Some(match name {
        "replace_class" => (DecoratorKind::ReplaceClass, PatchType::ClassReplacement),
        "override_method" => (DecoratorKind::OverrideMethod, PatchType::MethodOverride),
        "replace_function" => (DecoratorKind::ReplaceFunction, PatchType::FunctionReplacement),
        _ => return None,
    })
}

fn default_description(kind: DecoratorKind, target: &str, name: &str) -> String {
    match kind {
        DecoratorKind::ReplaceClass | DecoratorKind::ReplaceFunction => format!("Replace {target} with {name}"),
        DecoratorKind::OverrideMethod => format!("Override {target}"),
        DecoratorKind::ModifyInit => format!("Modify {target}.__init__"),
        DecoratorKind::AddHelperAfter => String::new(),
    }
}

pub(super) fn call_config_method(
    ev: &mut Evaluator,
    frame: &mut Frame,
    config: Shared<ConfigObj>,
    name: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    loc: &Loc,
) -> EResult<Value> {
    let _ = frame;
    if let Some((kind, patch_type)) = kind_of(name) {
        let slots = bind(
            name,
            &[(first_param(name), false), ("replacement", true), ("name_map", true), ("description", true)],
            args,
            kwargs,
            loc,
        )?;
        let mut slots = slots.into_iter();
        let target = slots.next().flatten().expect("required");
        let target = Value::Str(need_str(ev, target, "the patch target", loc)?);
        let replacement = or_none(slots.next().flatten());
        let name_map = or_none(slots.next().flatten());
        let description = slots.next().flatten();
        let replacement = ev.force(replacement)?;
        if !matches!(replacement, Value::None) {
            // Direct form: registers now and returns None.
            let replacement = need_def(ev, replacement, "`replacement=`", loc)?;
            let Value::Str(t) = &target else { unreachable!() };
            let description =
                description_or(ev, description, default_description(kind, t, &def_name(&replacement)), loc)?;
            let module = def_module(&replacement);
            let patch = new_patch(patch_type, target, replacement, module, description, name_map, loc);
            push(&config.borrow().patches, patch, "patches", loc)?;
            return Ok(Value::None);
        }
        let Value::Str(t) = &target else { unreachable!() };
        return Ok(Value::Decorator(Rc::new(PendingDecorator {
            config: config.clone(),
            kind,
            target: t.to_string(),
            name_map: Some(name_map),
            description,
            loc: loc.clone(),
        })));
    }
    match name {
        "modify_init" => {
            let mut slots =
                bind(name, &[("target_class", false), ("description", true)], args, kwargs, loc)?.into_iter();
            let target = need_str(ev, slots.next().flatten().expect("required"), "the patch target", loc)?;
            Ok(Value::Decorator(Rc::new(PendingDecorator {
                config: config.clone(),
                kind: DecoratorKind::ModifyInit,
                target: target.to_string(),
                name_map: None,
                description: slots.next().flatten(),
                loc: loc.clone(),
            })))
        }
        "add_helper_after" => {
            let mut slots = bind(name, &[("target", false), ("helper", true)], args, kwargs, loc)?.into_iter();
            let target = need_str(ev, slots.next().flatten().expect("required"), "the helper's target", loc)?;
            let pending = Rc::new(PendingDecorator {
                config: config.clone(),
                kind: DecoratorKind::AddHelperAfter,
                target: target.to_string(),
                name_map: None,
                description: None,
                loc: loc.clone(),
            });
            match slots.next().flatten() {
                None | Some(Value::None) => Ok(Value::Decorator(pending)),
                Some(helper) => {
                    register_decorated(ev, &pending, helper.clone(), loc)?;
                    Ok(helper)
                }
            }
        }
        "add_helper" => {
            let mut slots = bind(name, &[("func", true)], args, kwargs, loc)?.into_iter();
            match slots.next().flatten() {
                None | Some(Value::None) => {
                    Ok(Value::Method(Box::new(Value::Config(config.clone())), Rc::from("add_helper")))
                }
                Some(func) => {
                    let func = ev.force(func)?;
                    check_helper(&func, loc)?;
                    push(&config.borrow().helpers, func.clone(), "helpers", loc)?;
                    Ok(func)
                }
            }
        }
        "add_import" => {
            let slots = bind(
                name,
                &[("module", false), ("names", true), ("alias", true), ("is_from_import", true)],
                args,
                kwargs,
                loc,
            )?;
            let mut slots = slots.into_iter();
            let module =
                Value::Str(need_str(ev, slots.next().flatten().expect("required"), "the import's module", loc)?);
            let names = ev.force(or_none(slots.next().flatten()))?;
            let alias = ev.force(or_none(slots.next().flatten()))?;
            let is_from_import = ev.force(slots.next().flatten().unwrap_or(Value::Bool(true)))?;
            let spec = Value::ImportSpec(shared(ImportSpecObj { module, names, alias, is_from_import }));
            push(&config.borrow().additional_imports, spec, "additional_imports", loc)?;
            Ok(Value::None)
        }
        "add_post_import_block" => {
            let mut slots = bind(name, &[("block", false)], args, kwargs, loc)?.into_iter();
            let block = need_str(ev, slots.next().flatten().expect("required"), "the post-import block", loc)?;
            push(&config.borrow().post_import_blocks, Value::Str(block), "post_import_blocks", loc)?;
            Ok(Value::None)
        }
        "drop_import_names" => {
            if !kwargs.is_empty() {
                return Err(EvalError::new(loc.clone(), "`drop_import_names()` takes names as positional arguments"));
            }
            let set = config.borrow().drop_imported_names.clone();
            for a in args {
                let s = need_str(ev, a, "a dropped import name", loc)?;
                match &set {
                    Value::Set(s2) => set_add(s2, Value::Str(s), loc)?,
                    other => {
                        return Err(EvalError::new(
                            loc.clone(),
                            format!("config.drop_imported_names is {}, not a set", other.type_name()),
                        ));
                    }
                }
            }
            Ok(Value::None)
        }
        "exclude_from_output" => {
            if !kwargs.is_empty() {
                return Err(EvalError::new(loc.clone(), "`exclude_from_output()` takes names as positional arguments"));
            }
            let list = config.borrow().exclude.clone();
            for a in args {
                let s = need_str(ev, a, "an excluded name", loc)?;
                push(&list, Value::Str(s), "exclude", loc)?;
            }
            Ok(Value::None)
        }
        "get_patches_for_target" | "get_class_replacements" | "get_method_overrides" | "get_function_replacements" => {
            Ok(opaque(&format!("config.{name}(...)"), loc.clone()))
        }
        _ => {
            let err = EvalError::new(loc.clone(), format!("`PatchConfig` has no method `{name}`"));
            Err(match closest(name, &CONFIG_METHODS) {
                Some(s) => err.with_help(format!("did you mean `config.{s}`?")),
                None => err.with_help(format!("DSL methods: {}", CONFIG_METHODS.join(", "))),
            })
        }
    }
}

fn first_param(name: &str) -> &'static str {
    match name {
        "replace_class" => "target_class",
        "override_method" => "target_method",
        _ => "target_func",
    }
}

fn check_helper(func: &Value, loc: &Loc) -> EResult<()> {
    match func {
        Value::Opaque(_) | Value::Unknown(_) => Err(EvalError::new(
            loc.clone(),
            format!("a helper must be a function or class patchgen can read, but it is {}", func.type_name()),
        )
        .with_help(describe_origin(func))),
        _ => Ok(()),
    }
}

/// A patch decorator applied to a function or class.
pub(super) fn register_decorated(
    ev: &mut Evaluator,
    pending: &PendingDecorator,
    target: Value,
    loc: &Loc,
) -> EResult<()> {
    let config = &pending.config;
    if pending.kind == DecoratorKind::AddHelperAfter {
        let helper = ev.force(target)?;
        check_helper(&helper, loc)?;
        let h = Value::PositionedHelper(shared(PositionedHelperObj {
            target: Value::str(&pending.target),
            helper,
            placement: Value::str("after"),
        }));
        return push(&config.borrow().positioned_helpers, h, "positioned_helpers", loc);
    }
    let replacement = need_def(ev, target, "the decorated object", loc)?;
    let description = description_or(
        ev,
        pending.description.clone(),
        default_description(pending.kind, &pending.target, &def_name(&replacement)),
        loc,
    )?;
    let (patch_type, source_module, name_map) = match pending.kind {
        DecoratorKind::ReplaceClass => {
            (PatchType::ClassReplacement, def_module(&replacement), pending.name_map.clone())
        }
        DecoratorKind::OverrideMethod => {
            (PatchType::MethodOverride, def_module(&replacement), pending.name_map.clone())
        }
        DecoratorKind::ReplaceFunction => {
            (PatchType::FunctionReplacement, def_module(&replacement), pending.name_map.clone())
        }
        DecoratorKind::ModifyInit => (PatchType::InitModification, Value::None, None),
        DecoratorKind::AddHelperAfter => unreachable!(),
    };
    let patch = new_patch(
        patch_type,
        Value::str(&pending.target),
        replacement,
        source_module,
        description,
        name_map.unwrap_or(Value::None),
        &pending.loc,
    );
    push(&config.borrow().patches, patch, "patches", loc)
}

const PATCH_CONFIG_PARAMS: [(&str, bool); 12] = [
    ("source_module", false),
    ("target_file", true),
    ("description", true),
    ("patches", true),
    ("additional_imports", true),
    ("post_import_blocks", true),
    ("helpers", true),
    ("positioned_helpers", true),
    ("drop_imported_names", true),
    ("exclude", true),
    ("transformers_version", true),
    ("optional", true),
];

pub(super) fn call_builtin(
    ev: &mut Evaluator,
    frame: &mut Frame,
    builtin: Builtin,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    loc: &Loc,
) -> EResult<Value> {
    match builtin {
        Builtin::PatchConfig => {
            let slots = bind("PatchConfig", &PATCH_CONFIG_PARAMS, args, kwargs, loc)?;
            let mut s = slots.into_iter();
            let mut next = |default: Value| s.next().flatten().unwrap_or(default);
            let source_module = next(Value::None);
            let config = ConfigObj {
                source_module,
                target_file: next(Value::str("patched_modeling.py")),
                description: next(Value::str("")),
                patches: next(Value::list(vec![])),
                additional_imports: next(Value::list(vec![])),
                post_import_blocks: next(Value::list(vec![])),
                helpers: next(Value::list(vec![])),
                positioned_helpers: next(Value::list(vec![])),
                drop_imported_names: next(Value::Set(shared(vec![]))),
                exclude: next(Value::list(vec![])),
                transformers_version: next(Value::None),
                optional: next(Value::Bool(false)),
                created_at: loc.clone(),
            };
            Ok(Value::Config(shared(config)))
        }
        Builtin::CreatePatchFromExternal => {
            let slots = bind(
                "create_patch_from_external",
                &[
                    ("target", false),
                    ("replacement_module", false),
                    ("replacement_name", false),
                    ("patch_type", true),
                    ("description", true),
                ],
                args,
                kwargs,
                loc,
            )?;
            let mut s = slots.into_iter();
            let target = need_str(ev, s.next().flatten().expect("required"), "the patch target", loc)?;
            let module = need_str(ev, s.next().flatten().expect("required"), "replacement_module", loc)?;
            let rname = need_str(ev, s.next().flatten().expect("required"), "replacement_name", loc)?;
            let patch_type = ev.force(s.next().flatten().unwrap_or(Value::PatchType(PatchType::ClassReplacement)))?;
            if !matches!(patch_type, Value::PatchType(_)) {
                return Err(EvalError::new(loc.clone(), "patch_type must be a PatchType member"));
            }
            let description =
                description_or(ev, s.next().flatten(), format!("Replace {target} with {rname} from {module}"), loc)?;
            Ok(Value::Patch(shared(PatchObj {
                patch_type,
                target: Value::Str(target),
                replacement: Value::None,
                source_module: Value::Str(module.clone()),
                description,
                replacement_source: Value::str(&format!("{module}.{rname}")),
                name_map: Value::None,
                loc: loc.clone(),
            })))
        }
        Builtin::PatchClass => {
            let slots = bind(
                "Patch",
                &[
                    ("patch_type", false),
                    ("target", false),
                    ("replacement", false),
                    ("source_module", true),
                    ("description", true),
                    ("replacement_source", true),
                    ("name_map", true),
                ],
                args,
                kwargs,
                loc,
            )?;
            let mut s = slots.into_iter().map(or_none);
            let mut n = || s.next().unwrap_or(Value::None);
            let (patch_type, target, replacement) = (ev.force(n())?, n(), ev.force(n())?);
            Ok(Value::Patch(shared(PatchObj {
                patch_type,
                target,
                replacement,
                source_module: n(),
                description: n(),
                replacement_source: n(),
                name_map: n(),
                loc: loc.clone(),
            })))
        }
        Builtin::ImportSpecClass => {
            let slots = bind(
                "ImportSpec",
                &[("module", false), ("names", true), ("alias", true), ("is_from_import", true)],
                args,
                kwargs,
                loc,
            )?;
            let mut s = slots.into_iter();
            let module = or_none(s.next().flatten());
            let names = or_none(s.next().flatten());
            let alias = or_none(s.next().flatten());
            let is_from_import = s.next().flatten().unwrap_or(Value::Bool(true));
            Ok(Value::ImportSpec(shared(ImportSpecObj { module, names, alias, is_from_import })))
        }
        Builtin::PositionedHelperClass => {
            let slots = bind(
                "PositionedHelper",
                &[("target", false), ("helper", false), ("placement", true)],
                args,
                kwargs,
                loc,
            )?;
            let mut s = slots.into_iter();
            let target = or_none(s.next().flatten());
            let helper = ev.force(or_none(s.next().flatten()))?;
            let placement = s.next().flatten().unwrap_or(Value::str("after"));
            Ok(Value::PositionedHelper(shared(PositionedHelperObj { target, helper, placement })))
        }
        Builtin::PatchTypeEnum => {
            Err(EvalError::new(loc.clone(), "use a member such as `PatchType.CLASS_REPLACEMENT`"))
        }
        Builtin::DeepCopy | Builtin::ShallowCopy => {
            let mut s = bind("copy", &[("x", false), ("memo", true)], args, kwargs, loc)?.into_iter();
            let v = ev.force(s.next().flatten().expect("required"))?;
            Ok(if builtin == Builtin::DeepCopy { deep_copy(&v, &mut Vec::new()) } else { shallow_copy(&v) })
        }
        Builtin::Dedent => {
            let mut s = bind("dedent", &[("text", false)], args, kwargs, loc)?.into_iter();
            let text = need_str(ev, s.next().flatten().expect("required"), "the text to dedent", loc)?;
            Ok(Value::str(&crate::pytext::dedent(&text)))
        }
        Builtin::List | Builtin::Tuple | Builtin::Set | Builtin::Sorted => {
            let items = match args.first() {
                Some(a) => ev.iterate(frame, a, loc)?,
                None => vec![],
            };
            Ok(match builtin {
                Builtin::List => Value::list(items),
                Builtin::Tuple => Value::Tuple(Rc::new(items)),
                Builtin::Sorted => {
                    let mut strs = Vec::new();
                    for i in &items {
                        match i {
                            Value::Str(s) => strs.push(s.clone()),
                            _ => return Ok(opaque("sorted(...) of non-strings", loc.clone())),
                        }
                    }
                    strs.sort();
                    Value::list(strs.into_iter().map(Value::Str).collect())
                }
                _ => {
                    let set = shared(Vec::new());
                    for i in items {
                        set_add(&set, i, loc)?;
                    }
                    Value::Set(set)
                }
            })
        }
        Builtin::Dict => {
            let dict = shared(Vec::new());
            if let Some(a) = args.first() {
                match ev.force(a.clone())? {
                    Value::Dict(d) => *dict.borrow_mut() = d.borrow().clone(),
                    other => {
                        return Err(EvalError::new(
                            loc.clone(),
                            format!("dict({}) is not supported", other.type_name()),
                        ));
                    }
                }
            }
            for (k, v) in kwargs {
                super::objects::dict_set(&dict, Value::str(&k), v, loc)?;
            }
            Ok(Value::Dict(dict))
        }
        Builtin::Str => match args.first().map(|a| ev.force(a.clone())).transpose()? {
            Some(Value::Str(s)) => Ok(Value::Str(s)),
            Some(Value::Int(i)) => Ok(Value::str(&i.to_string())),
            None => Ok(Value::str("")),
            Some(other) => Ok(opaque(&format!("str({})", other.type_name()), loc.clone())),
        },
        Builtin::Len => match args.first().map(|a| ev.force(a.clone())).transpose()? {
            Some(Value::Str(s)) => Ok(Value::Int(s.chars().count() as i64)),
            Some(v @ (Value::List(_) | Value::Tuple(_) | Value::Set(_) | Value::Dict(_))) => {
                Ok(Value::Int(ev.iterate(frame, &v, loc)?.len() as i64))
            }
            _ => Ok(opaque("len(...)", loc.clone())),
        },
    }
}

fn shallow_copy(v: &Value) -> Value {
    match v {
        Value::List(l) => Value::list(l.borrow().clone()),
        Value::Dict(d) => Value::Dict(shared(d.borrow().clone())),
        Value::Set(s) => Value::Set(shared(s.borrow().clone())),
        Value::Config(c) => Value::Config(shared(c.borrow().clone())),
        Value::Patch(p) => Value::Patch(shared(p.borrow().clone())),
        other => other.clone(),
    }
}
