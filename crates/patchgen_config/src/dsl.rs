//! The patch DSL, statically: `PatchConfig(...)` and its methods,
//! `create_patch_from_external`, and the few builtins configs use. Each
//! method registers exactly what the reference's `patch_spec.py` registers,
//! including its defaults for descriptions.

use std::rc::Rc;

use super::args::{Args, Param, bind};
use super::eval::{EResult, EvalError, Evaluator, Frame, describe_origin, opaque};
use super::objects::{closest, set_add};
use super::plan::{Loc, PatchType};
use super::value::*;

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
    let d = ev.force(description.unwrap_or(Value::None))?;
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
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    let _ = frame;
    if let Some((kind, patch_type)) = kind_of(name) {
        let params = [(first_param(name), false), ("replacement", true), ("name_map", true), ("description", true)];
        let mut a = bind(name, &params, args, loc)?;
        let t = need_str(ev, a.required(first_param(name))?, "the patch target", loc)?;
        let target = Value::Str(t.clone());
        let replacement = a.or_none("replacement");
        let name_map = a.or_none("name_map");
        let description = a.optional("description");
        let replacement = ev.force(replacement)?;
        if !matches!(replacement, Value::None) {
            // Direct form: registers now and returns None.
            let replacement = need_def(ev, replacement, "`replacement=`", loc)?;
            let description =
                description_or(ev, description, default_description(kind, &t, &def_name(&replacement)), loc)?;
            let module = def_module(&replacement);
            let patch = new_patch(patch_type, target, replacement, module, description, name_map, loc);
            push(&config.borrow().patches, patch, "patches", loc)?;
            return Ok(Value::None);
        }
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
            let mut a = bind(name, &[("target_class", false), ("description", true)], args, loc)?;
            let target = need_str(ev, a.required("target_class")?, "the patch target", loc)?;
            Ok(Value::Decorator(Rc::new(PendingDecorator {
                config: config.clone(),
                kind: DecoratorKind::ModifyInit,
                target: target.to_string(),
                name_map: None,
                description: a.optional("description"),
                loc: loc.clone(),
            })))
        }
        "add_helper_after" => {
            let mut a = bind(name, &[("target", false), ("helper", true)], args, loc)?;
            let target = need_str(ev, a.required("target")?, "the helper's target", loc)?;
            let pending = Rc::new(PendingDecorator {
                config: config.clone(),
                kind: DecoratorKind::AddHelperAfter,
                target: target.to_string(),
                name_map: None,
                description: None,
                loc: loc.clone(),
            });
            match a.optional("helper") {
                None | Some(Value::None) => Ok(Value::Decorator(pending)),
                Some(helper) => {
                    register_decorated(ev, &pending, helper.clone(), loc)?;
                    Ok(helper)
                }
            }
        }
        "add_helper" => {
            let mut a = bind(name, &[("func", true)], args, loc)?;
            match a.optional("func") {
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
            let mut a = bind(name, &IMPORT_SPEC_PARAMS, args, loc)?;
            let module = Value::Str(need_str(ev, a.required("module")?, "the import's module", loc)?);
            let names = ev.force(a.or_none("names"))?;
            let alias = ev.force(a.or_none("alias"))?;
            let is_from_import = ev.force(a.or("is_from_import", Value::Bool(true)))?;
            let spec =
                Value::ImportSpec(shared(ImportSpecObj { module, names, alias, is_from_import, loc: loc.clone() }));
            push(&config.borrow().additional_imports, spec, "additional_imports", loc)?;
            Ok(Value::None)
        }
        "add_post_import_block" => {
            let mut a = bind(name, &[("block", false)], args, loc)?;
            let block = need_str(ev, a.required("block")?, "the post-import block", loc)?;
            push(&config.borrow().post_import_blocks, Value::Str(block.clone()), "post_import_blocks", loc)?;
            config.borrow_mut().call_sites.blocks.push((block.to_string(), loc.clone()));
            Ok(Value::None)
        }
        "drop_import_names" => {
            if !args.keywords.is_empty() {
                return Err(EvalError::new(loc.clone(), "`drop_import_names()` takes names as positional arguments"));
            }
            let set = config.borrow().drop_imported_names.clone();
            for a in args.positional {
                let s = need_str(ev, a, "a dropped import name", loc)?;
                config.borrow_mut().call_sites.drops.push((s.to_string(), loc.clone()));
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
            if !args.keywords.is_empty() {
                return Err(EvalError::new(loc.clone(), "`exclude_from_output()` takes names as positional arguments"));
            }
            let list = config.borrow().exclude.clone();
            for a in args.positional {
                let s = need_str(ev, a, "an excluded name", loc)?;
                config.borrow_mut().call_sites.excludes.push((s.to_string(), loc.clone()));
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

const IMPORT_SPEC_PARAMS: [Param<'static>; 4] =
    [("module", false), ("names", true), ("alias", true), ("is_from_import", true)];

const PATCH_CONFIG_PARAMS: [Param<'static>; 12] = [
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

/// Call one of the DSL's constructors (`PatchConfig`, `Patch`,
/// `ImportSpec`, `PositionedHelper`, `create_patch_from_external`); other
/// builtins are `builtins::call`'s.
pub(super) fn call_builtin(
    ev: &mut Evaluator,
    frame: &mut Frame,
    builtin: Builtin,
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    match builtin {
        Builtin::PatchConfig => {
            let mut a = bind("PatchConfig", &PATCH_CONFIG_PARAMS, args, loc)?;
            let config = ConfigObj {
                source_module: a.required("source_module")?,
                target_file: a.or("target_file", Value::str("patched_modeling.py")),
                description: a.or("description", Value::str("")),
                patches: a.or("patches", Value::list(vec![])),
                additional_imports: a.or("additional_imports", Value::list(vec![])),
                post_import_blocks: a.or("post_import_blocks", Value::list(vec![])),
                helpers: a.or("helpers", Value::list(vec![])),
                positioned_helpers: a.or("positioned_helpers", Value::list(vec![])),
                drop_imported_names: a.or("drop_imported_names", Value::Set(shared(vec![]))),
                exclude: a.or("exclude", Value::list(vec![])),
                transformers_version: a.or_none("transformers_version"),
                optional: a.or("optional", Value::Bool(false)),
                created_at: loc.clone(),
                call_sites: Default::default(),
            };
            Ok(Value::Config(shared(config)))
        }
        Builtin::CreatePatchFromExternal => {
            let params = [
                ("target", false),
                ("replacement_module", false),
                ("replacement_name", false),
                ("patch_type", true),
                ("description", true),
            ];
            let mut a = bind("create_patch_from_external", &params, args, loc)?;
            let target = need_str(ev, a.required("target")?, "the patch target", loc)?;
            let module = need_str(ev, a.required("replacement_module")?, "replacement_module", loc)?;
            let rname = need_str(ev, a.required("replacement_name")?, "replacement_name", loc)?;
            let patch_type = ev.force(a.or("patch_type", Value::PatchType(PatchType::ClassReplacement)))?;
            if !matches!(patch_type, Value::PatchType(_)) {
                return Err(EvalError::new(loc.clone(), "patch_type must be a PatchType member"));
            }
            let description = description_or(
                ev,
                a.optional("description"),
                format!("Replace {target} with {rname} from {module}"),
                loc,
            )?;
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
            let params = [
                ("patch_type", false),
                ("target", false),
                ("replacement", false),
                ("source_module", true),
                ("description", true),
                ("replacement_source", true),
                ("name_map", true),
            ];
            let mut a = bind("Patch", &params, args, loc)?;
            let patch_type = ev.force(a.required("patch_type")?)?;
            let target = a.required("target")?;
            let replacement = ev.force(a.required("replacement")?)?;
            Ok(Value::Patch(shared(PatchObj {
                patch_type,
                target,
                replacement,
                source_module: a.or_none("source_module"),
                description: a.or_none("description"),
                replacement_source: a.or_none("replacement_source"),
                name_map: a.or_none("name_map"),
                loc: loc.clone(),
            })))
        }
        Builtin::ImportSpecClass => {
            let mut a = bind("ImportSpec", &IMPORT_SPEC_PARAMS, args, loc)?;
            let module = a.required("module")?;
            let names = a.or_none("names");
            let alias = a.or_none("alias");
            let is_from_import = a.or("is_from_import", Value::Bool(true));
            Ok(Value::ImportSpec(shared(ImportSpecObj { module, names, alias, is_from_import, loc: loc.clone() })))
        }
        Builtin::PositionedHelperClass => {
            let mut a =
                bind("PositionedHelper", &[("target", false), ("helper", false), ("placement", true)], args, loc)?;
            let target = a.required("target")?;
            let helper = ev.force(a.required("helper")?)?;
            let placement = a.or("placement", Value::str("after"));
            Ok(Value::PositionedHelper(shared(PositionedHelperObj { target, helper, placement })))
        }
        Builtin::PatchTypeEnum => {
            Err(EvalError::new(loc.clone(), "use a member such as `PatchType.CLASS_REPLACEMENT`"))
        }
        _ => super::builtins::call(ev, frame, builtin, args, loc),
    }
}
