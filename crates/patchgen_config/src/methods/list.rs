//! Methods of lists and tuples.

use std::rc::Rc;

use super::{expect_args, unknown_method};
use crate::args::Args;
use crate::eval::{EResult, EvalError, Evaluator, Frame};
use crate::objects::{find_eq, index};
use crate::plan::Loc;
use crate::value::*;

pub(super) fn call(
    ev: &mut Evaluator,
    frame: &mut Frame,
    l: &Shared<Vec<Value>>,
    name: &str,
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    let Args { positional: mut args, keywords: kwargs } = args;
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

pub(super) fn call_tuple(t: &Rc<Vec<Value>>, name: &str, args: Args, loc: &Loc) -> EResult<Value> {
    let Args { positional: args, keywords: kwargs } = args;
    match name {
        "index" | "count" => {
            expect_args(name, &args, &kwargs, 1, 1, loc)?;
            seq_query(name, t, &args[0], loc)
        }
        _ => Err(unknown_method("tuple", name, &["index", "count"], loc)),
    }
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
