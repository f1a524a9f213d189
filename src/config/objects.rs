//! Attribute access, item access, comparisons and methods of the modelled
//! Python objects (lists, dicts, sets, strings, `Patch`, …).

use std::rc::Rc;

use ruff_python_ast::CmpOp;

use super::eval::{EResult, EvalError, Evaluator, Frame, describe_origin, opaque};
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
    use crate::suggest::distance;
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

fn index(len: usize, i: i64, loc: &Loc) -> EResult<usize> {
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

fn expect_args(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    min: usize,
    max: usize,
    loc: &Loc,
) -> EResult<()> {
    if !kwargs.is_empty() {
        return Err(EvalError::new(loc.clone(), format!("`{name}()` takes no keyword arguments here")));
    }
    if args.len() < min || args.len() > max {
        return Err(EvalError::new(
            loc.clone(),
            format!("`{name}()` takes {min}..={max} arguments ({} given)", args.len()),
        ));
    }
    Ok(())
}

fn expect_str<'v>(v: &'v Value, what: &str, loc: &Loc) -> EResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(EvalError::new(loc.clone(), format!("{what} must be a string, not {}", other.type_name()))
            .with_help(describe_origin(other))),
    }
}

/// Methods of lists, sets, dicts, tuples and strings.
pub(super) fn call_method(
    ev: &mut Evaluator,
    frame: &mut Frame,
    recv: Value,
    name: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    loc: &Loc,
) -> EResult<Value> {
    let mut args = args;
    for a in args.iter_mut() {
        if let Value::Lazy(_) = a {
            *a = ev.force(a.clone())?;
        }
    }
    match &recv {
        Value::List(l) => {
            match name {
                "append" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    l.borrow_mut().push(args.remove(0));
                }
                "extend" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let items = ev.iterate(frame, &args[0], loc)?;
                    l.borrow_mut().extend(items);
                }
                "insert" => {
                    expect_args(name, &args, &kwargs, 2, 2, loc)?;
                    let Value::Int(i) = args[0] else {
                        return Err(EvalError::new(loc.clone(), "list.insert index must be an integer"));
                    };
                    let len = l.borrow().len() as i64;
                    let i = if i < 0 { (len + i).max(0) } else { i.min(len) } as usize;
                    l.borrow_mut().insert(i, args.remove(1));
                }
                "remove" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let pos = find_eq(&l.borrow(), &args[0], loc)?;
                    match pos {
                        Some(p) => {
                            l.borrow_mut().remove(p);
                        }
                        None => return Err(EvalError::new(loc.clone(), "list.remove(x): x not in list")),
                    }
                }
                "pop" => {
                    expect_args(name, &args, &kwargs, 0, 1, loc)?;
                    let len = l.borrow().len();
                    let i = match args.first() {
                        Some(Value::Int(i)) => index(len, *i, loc)?,
                        None if len > 0 => len - 1,
                        _ => return Err(EvalError::new(loc.clone(), "pop from empty list or bad index")),
                    };
                    return Ok(l.borrow_mut().remove(i));
                }
                "clear" => {
                    expect_args(name, &args, &kwargs, 0, 0, loc)?;
                    l.borrow_mut().clear();
                }
                "copy" => {
                    expect_args(name, &args, &kwargs, 0, 0, loc)?;
                    return Ok(Value::list(l.borrow().clone()));
                }
                "reverse" => {
                    expect_args(name, &args, &kwargs, 0, 0, loc)?;
                    l.borrow_mut().reverse();
                }
                "index" | "count" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let items = l.borrow().clone();
                    return seq_query(name, &items, &args[0], loc);
                }
                _ => {
                    return Err(unknown_method(
                        "list",
                        name,
                        &["append", "extend", "insert", "remove", "pop", "clear", "copy", "reverse", "index", "count"],
                        loc,
                    ));
                }
            }
            Ok(Value::None)
        }
        Value::Tuple(t) => match name {
            "index" | "count" => {
                expect_args(name, &args, &kwargs, 1, 1, loc)?;
                seq_query(name, t, &args[0], loc)
            }
            _ => Err(unknown_method("tuple", name, &["index", "count"], loc)),
        },
        Value::Set(s) => {
            match name {
                "add" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    set_add(s, args.remove(0), loc)?;
                }
                "update" => {
                    for a in &args {
                        for item in ev.iterate(frame, a, loc)? {
                            set_add(s, item, loc)?;
                        }
                    }
                }
                "discard" | "remove" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let pos = find_eq(&s.borrow(), &args[0], loc)?;
                    match pos {
                        Some(p) => {
                            s.borrow_mut().remove(p);
                        }
                        None if name == "remove" => {
                            return Err(EvalError::new(loc.clone(), "set.remove(x): x not in set"));
                        }
                        None => {}
                    }
                }
                "clear" => s.borrow_mut().clear(),
                "copy" => return Ok(Value::Set(shared(s.borrow().clone()))),
                "union" => {
                    let new = shared(s.borrow().clone());
                    for a in &args {
                        for item in ev.iterate(frame, a, loc)? {
                            set_add(&new, item, loc)?;
                        }
                    }
                    return Ok(Value::Set(new));
                }
                _ => {
                    return Err(unknown_method(
                        "set",
                        name,
                        &["add", "update", "discard", "remove", "clear", "copy", "union"],
                        loc,
                    ));
                }
            }
            Ok(Value::None)
        }
        Value::Dict(d) => {
            match name {
                "update" => {
                    for a in &args {
                        match a {
                            Value::Dict(other) => {
                                let items = other.borrow().clone();
                                for (k, v) in items {
                                    dict_set(d, k, v, loc)?;
                                }
                            }
                            other => {
                                return Err(EvalError::new(
                                    loc.clone(),
                                    format!("dict.update of {} is not supported", other.type_name()),
                                ));
                            }
                        }
                    }
                    for (k, v) in kwargs {
                        dict_set(d, Value::str(&k), v, loc)?;
                    }
                }
                "get" => {
                    let key = args.first().cloned().unwrap_or(Value::None);
                    for (k, v) in d.borrow().iter() {
                        if k.py_eq(&key) == Some(true) {
                            return Ok(v.clone());
                        }
                    }
                    return Ok(args.get(1).cloned().unwrap_or(Value::None));
                }
                "keys" => return Ok(Value::list(d.borrow().iter().map(|(k, _)| k.clone()).collect())),
                "values" => return Ok(Value::list(d.borrow().iter().map(|(_, v)| v.clone()).collect())),
                "items" => {
                    return Ok(Value::list(
                        d.borrow().iter().map(|(k, v)| Value::Tuple(Rc::new(vec![k.clone(), v.clone()]))).collect(),
                    ));
                }
                "copy" => return Ok(Value::Dict(shared(d.borrow().clone()))),
                "setdefault" => {
                    let key = args.first().cloned().unwrap_or(Value::None);
                    for (k, v) in d.borrow().iter() {
                        if k.py_eq(&key) == Some(true) {
                            return Ok(v.clone());
                        }
                    }
                    let default = args.get(1).cloned().unwrap_or(Value::None);
                    dict_set(d, key, default.clone(), loc)?;
                    return Ok(default);
                }
                _ => {
                    return Err(unknown_method(
                        "dict",
                        name,
                        &["update", "get", "keys", "values", "items", "copy", "setdefault"],
                        loc,
                    ));
                }
            }
            Ok(Value::None)
        }
        Value::Str(s) => {
            let s: &str = s;
            Ok(match name {
                "strip" | "lstrip" | "rstrip" if args.is_empty() => Value::str(match name {
                    "strip" => crate::pytext::strip(s),
                    "lstrip" => crate::pytext::lstrip(s),
                    _ => crate::pytext::rstrip(s),
                }),
                "lower" => Value::str(&s.to_lowercase()),
                "upper" => Value::str(&s.to_uppercase()),
                "startswith" | "endswith" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let p = expect_str(&args[0], "argument", loc)?;
                    Value::Bool(if name == "startswith" { s.starts_with(p) } else { s.ends_with(p) })
                }
                "replace" => {
                    expect_args(name, &args, &kwargs, 2, 2, loc)?;
                    let a = expect_str(&args[0], "argument", loc)?;
                    let b = expect_str(&args[1], "argument", loc)?;
                    Value::str(&s.replace(a, b))
                }
                "join" => {
                    expect_args(name, &args, &kwargs, 1, 1, loc)?;
                    let items = ev.iterate(frame, &args[0], loc)?;
                    let mut parts = Vec::new();
                    for i in &items {
                        parts.push(expect_str(i, "joined item", loc)?.to_string());
                    }
                    Value::str(&parts.join(s))
                }
                "split" if args.len() == 1 => {
                    let sep = expect_str(&args[0], "separator", loc)?;
                    if sep.is_empty() {
                        return Err(EvalError::new(loc.clone(), "empty separator"));
                    }
                    Value::list(s.split(sep).map(Value::str).collect())
                }
                _ => opaque(&format!("str.{name}(...)"), loc.clone()),
            })
        }
        other => Ok(opaque(&format!("{}.{name}(...)", other.type_name()), loc.clone())),
    }
}

fn unknown_method(type_name: &str, name: &str, known: &[&str], loc: &Loc) -> EvalError {
    let err = EvalError::new(loc.clone(), format!("`{type_name}.{name}` is not supported by static evaluation"));
    match closest(name, known) {
        Some(s) if s != name => err.with_help(format!("did you mean `{s}`?")),
        _ => err.with_help(format!("supported: {}", known.join(", "))),
    }
}

fn find_eq(items: &[Value], x: &Value, loc: &Loc) -> EResult<Option<usize>> {
    for (i, v) in items.iter().enumerate() {
        match v.py_same_or_eq(x) {
            Some(true) => return Ok(Some(i)),
            Some(false) => {}
            None => return Err(EvalError::new(loc.clone(), "comparison with a value not known statically")),
        }
    }
    Ok(None)
}

fn seq_query(name: &str, items: &[Value], x: &Value, loc: &Loc) -> EResult<Value> {
    if name == "count" {
        let mut n = 0;
        for v in items {
            if v.py_eq(x) == Some(true) {
                n += 1;
            }
        }
        return Ok(Value::Int(n));
    }
    match find_eq(items, x, loc)? {
        Some(i) => Ok(Value::Int(i as i64)),
        None => Err(EvalError::new(loc.clone(), "value is not in the sequence")),
    }
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
