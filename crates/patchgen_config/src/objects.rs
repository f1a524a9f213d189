//! Attribute access, item access and comparisons of the modelled Python
//! objects (lists, dicts, sets, strings, `Patch`, …); their methods are in
//! `methods/`.

use std::rc::Rc;

use ruff_python_ast::CmpOp;

use super::eval::{EResult, EvalError, Evaluator, Frame, opaque};
use super::plan::{Loc, PatchType};
use super::value::*;

pub(super) fn getattr(ev: &mut Evaluator, base: Value, attr: &str, loc: &Loc) -> EResult<Value> {
    let base = match base {
        Value::Lazy(_) => ev.force(base)?,
        other => other,
    };
    Ok(match &base {
        Value::Config(c) => {
            if let Some(v) = c.borrow().field(attr) {
                return Ok(v.clone());
            }
            if CONFIG_METHODS.contains(&attr) {
                return Ok(Value::Method(Box::new(base.clone()), Rc::from(attr)));
            }
            return Err(no_attr(
                "PatchConfig",
                attr,
                &CONFIG_FIELDS.iter().chain(CONFIG_METHODS.iter()).copied().collect::<Vec<_>>(),
                loc,
            ));
        }
        Value::Patch(p) => {
            let p = p.borrow();
            match attr {
                "patch_type" => p.patch_type.clone(),
                "target" => p.target.clone(),
                "replacement" => p.replacement.clone(),
                "source_module" => p.source_module.clone(),
                "description" => p.description.clone(),
                "replacement_source" => p.replacement_source.clone(),
                "name_map" => p.name_map.clone(),
                _ => return Err(no_attr("Patch", attr, &PATCH_FIELDS, loc)),
            }
        }
        Value::ImportSpec(s) => {
            let s = s.borrow();
            match attr {
                "module" => s.module.clone(),
                "names" => s.names.clone(),
                "alias" => s.alias.clone(),
                "is_from_import" => s.is_from_import.clone(),
                _ => return Err(no_attr("ImportSpec", attr, &IMPORT_SPEC_FIELDS, loc)),
            }
        }
        Value::PositionedHelper(h) => {
            let h = h.borrow();
            match attr {
                "target" => h.target.clone(),
                "helper" => h.helper.clone(),
                "placement" => h.placement.clone(),
                _ => return Err(no_attr("PositionedHelper", attr, &POSITIONED_HELPER_FIELDS, loc)),
            }
        }
        Value::Def(d) => match attr {
            "__name__" => Value::str(&d.name),
            "__qualname__" => Value::str(&d.qualname),
            "__module__" => Value::str(&d.module),
            "__wrapped__" => base.clone(),
            _ if d.is_class => match super::source::class_member(d, attr) {
                Some(member) => Value::Def(Rc::new(member)),
                None => opaque(&format!("{}.{attr}", d.name), loc.clone()),
            },
            _ => opaque(&format!("{}.{attr}", d.name), loc.clone()),
        },
        Value::Module(m) => {
            if super::eval::is_dsl_module(m) {
                return Ok(match attr {
                    "PatchConfig" => Value::Builtin(Builtin::PatchConfig),
                    "Patch" => Value::Builtin(Builtin::PatchClass),
                    "ImportSpec" => Value::Builtin(Builtin::ImportSpecClass),
                    "PositionedHelper" => Value::Builtin(Builtin::PositionedHelperClass),
                    "PatchType" => Value::Builtin(Builtin::PatchTypeEnum),
                    "create_patch_from_external" => Value::Builtin(Builtin::CreatePatchFromExternal),
                    "patch_spec" => Value::Module(Rc::from(format!("{m}.patch_spec").as_str())),
                    _ => opaque(&format!("{m}.{attr}"), loc.clone()),
                });
            }
            match (&**m, attr) {
                ("typing", "TYPE_CHECKING") => Value::Bool(false),
                ("copy", "deepcopy") => Value::Builtin(Builtin::DeepCopy),
                ("copy", "copy") => Value::Builtin(Builtin::ShallowCopy),
                ("textwrap", "dedent") => Value::Builtin(Builtin::Dedent),
                _ => Value::Lazy(Rc::new(LazyRef { module: m.to_string(), attr: attr.to_string(), loc: loc.clone() })),
            }
        }
        Value::Builtin(Builtin::PatchTypeEnum) => match PatchType::ALL.iter().find(|p| p.member() == attr) {
            Some(p) => Value::PatchType(*p),
            None => return Err(no_attr("PatchType", attr, &PatchType::ALL.map(|p| p.member()), loc)),
        },
        Value::PatchType(p) => match attr {
            "value" => Value::str(p.value()),
            "name" => Value::str(p.member()),
            _ => return Err(no_attr("PatchType member", attr, &["value", "name"], loc)),
        },
        Value::List(_) | Value::Set(_) | Value::Dict(_) | Value::Str(_) | Value::Tuple(_) => {
            Value::Method(Box::new(base.clone()), Rc::from(attr))
        }
        Value::Opaque(o) => opaque(&format!("{}.{attr}", o.what), loc.clone()),
        Value::Unknown(u) => Value::Unknown(u.clone()),
        other => opaque(&format!("{}.{attr}", other.type_name()), loc.clone()),
    })
}

fn no_attr(type_name: &str, attr: &str, known: &[&str], loc: &Loc) -> EvalError {
    let err = EvalError::new(loc.clone(), format!("`{type_name}` has no attribute `{attr}`"));
    match closest(attr, known) {
        Some(s) => err.with_help(format!("did you mean `{s}`?")),
        None => err.with_help(format!("known: {}", known.join(", "))),
    }
}

/// The known name closest to a misspelt one, if any is close.
pub(super) fn closest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    use patchgen_diagnostics::suggest::distance;
    known
        .iter()
        .map(|k| (distance(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

pub(super) fn setattr(ev: &mut Evaluator, obj: &Value, attr: &str, value: Value, loc: &Loc) -> EResult<()> {
    let _ = ev;
    match obj {
        Value::Config(c) => {
            let mut c = c.borrow_mut();
            match c.field_mut(attr) {
                Some(field) => {
                    *field = value;
                    Ok(())
                }
                None => Err(no_attr("PatchConfig", attr, &CONFIG_FIELDS, loc)),
            }
        }
        Value::Patch(p) => {
            let mut p = p.borrow_mut();
            match p.field_mut(attr) {
                Some(field) => {
                    *field = value;
                    Ok(())
                }
                None => Err(no_attr("Patch", attr, &PATCH_FIELDS, loc)),
            }
        }
        Value::Opaque(_) | Value::Unknown(_) | Value::Module(_) | Value::Def(_) => Ok(()),
        other => Err(EvalError::new(loc.clone(), format!("cannot set attribute `{attr}` on {}", other.type_name()))),
    }
}

pub(super) fn index(len: usize, i: i64, loc: &Loc) -> EResult<usize> {
    let idx = if i < 0 { len as i64 + i } else { i };
    if idx < 0 || idx as usize >= len {
        return Err(EvalError::new(loc.clone(), "index out of range"));
    }
    Ok(idx as usize)
}

pub(super) fn dict_set(dict: &Shared<Vec<(Value, Value)>>, key: Value, value: Value, loc: &Loc) -> EResult<()> {
    let mut d = dict.borrow_mut();
    for (k, v) in d.iter_mut() {
        match k.py_eq(&key) {
            Some(true) => {
                *v = value;
                return Ok(());
            }
            Some(false) => {}
            None => return Err(EvalError::new(loc.clone(), "dict key not known statically")),
        }
    }
    d.push((key, value));
    Ok(())
}

pub(super) fn setitem(obj: &Value, key: Value, value: Value, loc: &Loc) -> EResult<()> {
    match (obj, &key) {
        (Value::List(l), Value::Int(i)) => {
            let len = l.borrow().len();
            let i = index(len, *i, loc)?;
            l.borrow_mut()[i] = value;
            Ok(())
        }
        (Value::Dict(d), _) => dict_set(d, key, value, loc),
        (Value::Opaque(_) | Value::Unknown(_), _) => Ok(()),
        _ => Err(EvalError::new(loc.clone(), format!("cannot assign an item of {}", obj.type_name()))),
    }
}

pub(super) fn getitem(obj: &Value, key: &Value, loc: &Loc) -> EResult<Value> {
    Ok(match (obj, key) {
        (Value::List(l), Value::Int(i)) => {
            let l = l.borrow();
            l[index(l.len(), *i, loc)?].clone()
        }
        (Value::Tuple(t), Value::Int(i)) => t[index(t.len(), *i, loc)?].clone(),
        (Value::Str(s), Value::Int(i)) => {
            let chars: Vec<char> = s.chars().collect();
            Value::str(&chars[index(chars.len(), *i, loc)?].to_string())
        }
        (Value::Dict(d), _) => {
            for (k, v) in d.borrow().iter() {
                match k.py_eq(key) {
                    Some(true) => return Ok(v.clone()),
                    Some(false) => {}
                    None => return Ok(opaque("dict item", loc.clone())),
                }
            }
            return Err(EvalError::new(loc.clone(), "key not in dict"));
        }
        (Value::Opaque(_) | Value::Unknown(_), _) | (_, Value::Opaque(_) | Value::Unknown(_)) => {
            opaque("subscript of an unknown value", loc.clone())
        }
        _ => opaque(&format!("{}[...]", obj.type_name()), loc.clone()),
    })
}

pub(super) fn slice(obj: &Value, lo: Option<i64>, hi: Option<i64>, loc: &Loc) -> EResult<Value> {
    fn bounds(len: usize, lo: Option<i64>, hi: Option<i64>) -> (usize, usize) {
        let norm = |v: i64| -> usize {
            let v = if v < 0 { len as i64 + v } else { v };
            v.clamp(0, len as i64) as usize
        };
        let a = lo.map(norm).unwrap_or(0);
        let b = hi.map(norm).unwrap_or(len);
        (a, b.max(a))
    }
    Ok(match obj {
        Value::List(l) => {
            let l = l.borrow();
            let (a, b) = bounds(l.len(), lo, hi);
            Value::list(l[a..b].to_vec())
        }
        Value::Tuple(t) => {
            let (a, b) = bounds(t.len(), lo, hi);
            Value::Tuple(Rc::new(t[a..b].to_vec()))
        }
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            let (a, b) = bounds(chars.len(), lo, hi);
            Value::str(&chars[a..b].iter().collect::<String>())
        }
        _ => opaque("slice", loc.clone()),
    })
}

fn contains(
    ev: &mut Evaluator,
    frame: &mut Frame,
    container: &Value,
    item: &Value,
    loc: &Loc,
) -> EResult<Option<bool>> {
    Ok(match container {
        Value::Str(s) => match item {
            Value::Str(sub) => Some(s.contains(&**sub)),
            _ => None,
        },
        Value::Opaque(_) | Value::Unknown(_) => None,
        _ => {
            let items = ev.iterate(frame, container, loc)?;
            let mut unknown = false;
            for x in items {
                match x.py_same_or_eq(item) {
                    Some(true) => return Ok(Some(true)),
                    Some(false) => {}
                    None => unknown = true,
                }
            }
            if unknown { None } else { Some(false) }
        }
    })
}

pub(super) fn compare(
    ev: &mut Evaluator,
    frame: &mut Frame,
    l: &Value,
    op: CmpOp,
    r: &Value,
    loc: &Loc,
) -> EResult<Option<bool>> {
    use std::cmp::Ordering;
    let order = |l: &Value, r: &Value| -> Option<Ordering> {
        match (l, r) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Float(a), Value::Float(b)) => a.partial_cmp(b),
            (Value::Int(a), Value::Float(b)) => (*a as f64).partial_cmp(b),
            (Value::Float(a), Value::Int(b)) => a.partial_cmp(&(*b as f64)),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            _ => None,
        }
    };
    Ok(match op {
        CmpOp::Eq => l.py_eq(r),
        CmpOp::NotEq => l.py_eq(r).map(|b| !b),
        CmpOp::Is => l.py_is(r),
        CmpOp::IsNot => l.py_is(r).map(|b| !b),
        CmpOp::In => contains(ev, frame, r, l, loc)?,
        CmpOp::NotIn => contains(ev, frame, r, l, loc)?.map(|b| !b),
        CmpOp::Lt => order(l, r).map(|o| o == Ordering::Less),
        CmpOp::LtE => order(l, r).map(|o| o != Ordering::Greater),
        CmpOp::Gt => order(l, r).map(|o| o == Ordering::Greater),
        CmpOp::GtE => order(l, r).map(|o| o != Ordering::Less),
    })
}

pub(super) fn find_eq(items: &[Value], x: &Value, loc: &Loc) -> EResult<Option<usize>> {
    for (i, v) in items.iter().enumerate() {
        match v.py_same_or_eq(x) {
            Some(true) => return Ok(Some(i)),
            Some(false) => {}
            None => return Err(EvalError::new(loc.clone(), "comparison with a value not known statically")),
        }
    }
    Ok(None)
}

pub(super) fn set_add(set: &Shared<Vec<Value>>, item: Value, loc: &Loc) -> EResult<()> {
    if !item.is_hashable_known() {
        if matches!(item, Value::List(_) | Value::Dict(_) | Value::Set(_)) {
            return Err(EvalError::new(loc.clone(), format!("unhashable type: {}", item.type_name())));
        }
        set.borrow_mut().push(item);
        return Ok(());
    }
    if find_eq(&set.borrow(), &item, loc)?.is_none() {
        set.borrow_mut().push(item);
    }
    Ok(())
}
