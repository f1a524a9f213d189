//! Methods of dicts.

use std::rc::Rc;

use super::unknown_method;
use crate::args::Args;
use crate::eval::{EResult, EvalError};
use crate::objects::dict_set;
use crate::plan::Loc;
use crate::value::*;

pub(super) fn call(d: &Shared<Vec<(Value, Value)>>, name: &str, args: Args, loc: &Loc) -> EResult<Value> {
    let Args { positional: args, keywords: kwargs } = args;
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
