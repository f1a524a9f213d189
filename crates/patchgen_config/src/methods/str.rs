//! Methods of strings (those configs use; others are opaque).

use super::{expect_args, expect_str};
use crate::args::Args;
use crate::eval::{EResult, EvalError, Evaluator, Frame, opaque, too_large};
use crate::plan::Loc;
use crate::value::*;

pub(super) fn call(
    ev: &mut Evaluator,
    frame: &mut Frame,
    s: &str,
    name: &str,
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    let Args { positional: args, keywords: kwargs } = args;
    Ok(match name {
        "strip" | "lstrip" | "rstrip" if args.is_empty() => Value::str(match name {
            "strip" => patchgen_python::pytext::strip(s),
            "lstrip" => patchgen_python::pytext::lstrip(s),
            _ => patchgen_python::pytext::rstrip(s),
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
            // Measure before building: `("a" * 9000000).replace("a", "a" * 200)`.
            let hits = if a.is_empty() { s.chars().count() + 1 } else { s.matches(a).count() };
            let grown = (s.len() as u128 - (hits * a.len()) as u128) + hits as u128 * b.len() as u128;
            if grown > MAX_VALUE_SIZE as u128 {
                return Err(too_large(loc));
            }
            Value::str(&s.replace(a, b))
        }
        "join" => {
            expect_args(name, &args, &kwargs, 1, 1, loc)?;
            let items = ev.iterate(frame, &args[0], loc)?;
            let mut grown = s.len() as u128 * items.len().saturating_sub(1) as u128;
            for i in &items {
                grown += expect_str(i, "joined item", loc)?.len() as u128;
            }
            if grown > MAX_VALUE_SIZE as u128 {
                return Err(too_large(loc));
            }
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
