//! Methods of the modelled Python objects, one module per receiver type
//! (a `PatchConfig`'s methods are the DSL's: `dsl.rs`). Arguments that are
//! lazy imports are resolved first; a method patchgen does not model is an
//! error with the supported ones listed, or, on strings, an opaque value.

mod dict;
mod list;
mod set;
mod str;

use super::args::Args;
use super::eval::{EResult, EvalError, Evaluator, Frame, describe_origin, opaque};
use super::objects::closest;
use super::plan::Loc;
use super::value::*;

/// Methods of lists, sets, dicts, tuples and strings.
pub(crate) fn call_method(
    ev: &mut Evaluator,
    frame: &mut Frame,
    recv: Value,
    name: &str,
    args: Args,
    loc: &Loc,
) -> EResult<Value> {
    let mut args = args;
    for a in args.positional.iter_mut() {
        if let Value::Lazy(_) = a {
            *a = ev.force(a.clone())?;
        }
    }
    match &recv {
        Value::List(l) => list::call(ev, frame, l, name, args, loc),
        Value::Tuple(t) => list::call_tuple(t, name, args, loc),
        Value::Set(s) => set::call(ev, frame, s, name, args, loc),
        Value::Dict(d) => dict::call(d, name, args, loc),
        Value::Str(s) => str::call(ev, frame, s, name, args, loc),
        other => Ok(opaque(&format!("{}.{name}(...)", other.type_name()), loc.clone())),
    }
}

/// Exactly `min..=max` positional arguments and no keywords.
pub(super) fn expect_args(
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

/// An argument that must be a string.
pub(super) fn expect_str<'v>(v: &'v Value, what: &str, loc: &Loc) -> EResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(EvalError::new(loc.clone(), format!("{what} must be a string, not {}", other.type_name()))
            .with_help(describe_origin(other))),
    }
}

/// A method patchgen does not model: the closest supported one, else the list.
pub(super) fn unknown_method(type_name: &str, name: &str, known: &[&str], loc: &Loc) -> EvalError {
    let err = EvalError::new(loc.clone(), format!("`{type_name}.{name}` is not supported by static evaluation"));
    match closest(name, known) {
        Some(s) if s != name => err.with_help(format!("did you mean `{s}`?")),
        _ => err.with_help(format!("supported: {}", known.join(", "))),
    }
}
