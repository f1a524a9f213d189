//! Python's built-in names as configs use them: which names resolve to
//! what (the DSL's, the few standard-library functions patchgen models,
//! Python's builtins), and calls of the modelled builtins (`list`, `dict`,
//! `set`, `tuple`, `sorted`, `str`, `len`, `copy.copy`/`deepcopy`,
//! `textwrap.dedent`). Builtins that only matter at run time are opaque.

use std::rc::Rc;

use super::args::{Args, bind};
use super::dsl::need_str;
use super::eval::{EResult, EvalError, Evaluator, Frame, opaque};
use super::objects::set_add;
use super::plan::Loc;
use super::value::*;

pub(super) fn dsl_name(name: &str) -> Option<Value> {
    Some(Value::Builtin(match name {
        "PatchConfig" => Builtin::PatchConfig,
        "Patch" => Builtin::PatchClass,
        "ImportSpec" => Builtin::ImportSpecClass,
        "PositionedHelper" => Builtin::PositionedHelperClass,
        "PatchType" => Builtin::PatchTypeEnum,
        "create_patch_from_external" => Builtin::CreatePatchFromExternal,
        _ => return None,
    }))
}

/// Names of the standard library patchgen models.
pub(super) fn stdlib_name(module: &str, name: &str) -> Option<Value> {
    Some(match (module, name) {
        ("typing", "TYPE_CHECKING") | ("typing_extensions", "TYPE_CHECKING") => Value::Bool(false),
        ("copy", "deepcopy") => Value::Builtin(Builtin::DeepCopy),
        ("copy", "copy") => Value::Builtin(Builtin::ShallowCopy),
        ("textwrap", "dedent") => Value::Builtin(Builtin::Dedent),
        _ => return None,
    })
}

pub(super) fn builtin_name(name: &str) -> Option<Value> {
    Some(match name {
        "list" => Value::Builtin(Builtin::List),
        "tuple" => Value::Builtin(Builtin::Tuple),
        "dict" => Value::Builtin(Builtin::Dict),
        "set" | "frozenset" => Value::Builtin(Builtin::Set),
        "str" => Value::Builtin(Builtin::Str),
        "len" => Value::Builtin(Builtin::Len),
        "sorted" => Value::Builtin(Builtin::Sorted),
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "None" => Value::None,
        // Builtins that only matter at run time: opaque, never an error.
        "print"
        | "isinstance"
        | "getattr"
        | "setattr"
        | "hasattr"
        | "object"
        | "int"
        | "float"
        | "bool"
        | "bytes"
        | "type"
        | "super"
        | "property"
        | "staticmethod"
        | "classmethod"
        | "range"
        | "enumerate"
        | "zip"
        | "map"
        | "filter"
        | "min"
        | "max"
        | "sum"
        | "any"
        | "all"
        | "abs"
        | "callable"
        | "iter"
        | "next"
        | "repr"
        | "id"
        | "hash"
        | "vars"
        | "dir"
        | "globals"
        | "locals"
        | "open"
        | "Exception"
        | "ValueError"
        | "TypeError"
        | "KeyError"
        | "RuntimeError"
        | "ImportError"
        | "AttributeError"
        | "NotImplementedError"
        | "NotImplemented"
        | "Ellipsis"
        | "__import__"
        | "slice"
        | "reversed"
        | "round"
        | "divmod"
        | "pow"
        | "format"
        | "chr"
        | "ord"
        | "hex"
        | "oct"
        | "bin"
        | "memoryview"
        | "bytearray"
        | "complex"
        | "issubclass"
        | "delattr"
        | "__builtins__"
        | "__doc__"
        | "__spec__"
        | "__loader__"
        | "__package__"
        | "AssertionError"
        | "StopIteration"
        | "OSError"
        | "IndexError"
        | "UserWarning"
        | "DeprecationWarning"
        | "Warning" => Value::Opaque(Rc::new(Opaque {
            what: format!("builtin {name}"),
            loc: Loc::line(std::path::PathBuf::new(), 0),
        })),
        _ => return None,
    })
}

/// Call a builtin: Python's modelled ones here, the DSL's constructors
/// (`PatchConfig`, `Patch`, …) in `dsl::call_builtin`.
pub(super) fn call(ev: &mut Evaluator, frame: &mut Frame, builtin: Builtin, args: Args, loc: &Loc) -> EResult<Value> {
    match builtin {
        Builtin::DeepCopy | Builtin::ShallowCopy => {
            let mut a = bind("copy", &[("x", false), ("memo", true)], args, loc)?;
            let v = ev.force(a.required("x")?)?;
            Ok(if builtin == Builtin::DeepCopy { deep_copy(&v, &mut Vec::new()) } else { shallow_copy(&v) })
        }
        Builtin::Dedent => {
            let mut a = bind("dedent", &[("text", false)], args, loc)?;
            let text = need_str(ev, a.required("text")?, "the text to dedent", loc)?;
            Ok(Value::str(&patchgen_python::pytext::dedent(&text)))
        }
        Builtin::List | Builtin::Tuple | Builtin::Set | Builtin::Sorted => {
            let items = match args.positional.first() {
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
            if let Some(a) = args.positional.first() {
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
            for (k, v) in args.keywords {
                super::objects::dict_set(&dict, Value::str(&k), v, loc)?;
            }
            Ok(Value::Dict(dict))
        }
        Builtin::Str => match args.positional.first().map(|a| ev.force(a.clone())).transpose()? {
            Some(Value::Str(s)) => Ok(Value::Str(s)),
            Some(Value::Int(i)) => Ok(Value::str(&i.to_string())),
            None => Ok(Value::str("")),
            Some(other) => Ok(opaque(&format!("str({})", other.type_name()), loc.clone())),
        },
        Builtin::Len => match args.positional.first().map(|a| ev.force(a.clone())).transpose()? {
            Some(Value::Str(s)) => Ok(Value::Int(s.chars().count() as i64)),
            Some(v @ (Value::List(_) | Value::Tuple(_) | Value::Set(_) | Value::Dict(_))) => {
                Ok(Value::Int(ev.iterate(frame, &v, loc)?.len() as i64))
            }
            _ => Ok(opaque("len(...)", loc.clone())),
        },
        // The DSL's constructors are the DSL's.
        Builtin::PatchConfig
        | Builtin::PatchClass
        | Builtin::ImportSpecClass
        | Builtin::PositionedHelperClass
        | Builtin::PatchTypeEnum
        | Builtin::CreatePatchFromExternal => super::dsl::call_builtin(ev, frame, builtin, args, loc),
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
