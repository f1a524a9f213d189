//! Methods of sets.

use super::{expect_args, unknown_method};
use crate::args::Args;
use crate::eval::{EResult, EvalError, Evaluator, Frame};
use crate::objects::{find_eq, set_add};
use crate::plan::Loc;
use crate::value::*;

pub(super) fn call(
    ev: &mut Evaluator,
    frame: &mut Frame,
    s: &Shared<Vec<Value>>,
    name: &str,
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    let Args { positional: mut args, keywords: kwargs } = args;
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
                None if name == "remove" => return Err(EvalError::new(loc.clone(), "set.remove(x): x not in set")),
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
