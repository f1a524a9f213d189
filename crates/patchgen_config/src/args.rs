//! Binding a call's arguments to a Python signature, as CPython does for
//! the DSL's functions: positionals fill parameters in order, keywords by
//! name; too many positionals, a repeated or unknown keyword (with a
//! did-you-mean) and a missing required parameter are errors, reported
//! before the function looks at any value.
//!
//! The result is read by parameter name: [`Bound::required`] gives a
//! required parameter's value (an error, never a panic, should it be
//! missing), [`Bound::optional`] / [`Bound::or`] an optional one's.

use super::error::{EResult, EvalError};
use super::objects::closest;
use super::plan::Loc;
use super::value::Value;

/// A call's evaluated arguments, as the callee receives them: the
/// positionals (`*` already expanded), then the keywords in source order
/// (`**` already expanded).
pub(crate) struct Args {
    pub positional: Vec<Value>,
    pub keywords: Vec<(String, Value)>,
}

impl Args {
    /// Positional arguments only.
    pub(crate) fn positional(values: Vec<Value>) -> Args {
        Args { positional: values, keywords: Vec::new() }
    }
}

/// A parameter: its name and whether it has a default.
pub(super) type Param<'p> = (&'p str, bool);

/// Arguments bound to the parameters of `func`.
pub(super) struct Bound<'p> {
    func: &'p str,
    params: &'p [Param<'p>],
    slots: Vec<Option<Value>>,
    loc: &'p Loc,
}

/// Bind `args` to `params` (in declaration order).
pub(super) fn bind<'p>(func: &'p str, params: &'p [Param<'p>], args: Args, loc: &'p Loc) -> EResult<Bound<'p>> {
    let Args { positional: args, keywords: kwargs } = args;
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
                    return Err(EvalError::new(loc.clone(), format!("`{func}()` got multiple values for `{name}`"))
                        .about_keyword(&name));
                }
                slots[i] = Some(v);
            }
            None => {
                let names: Vec<&str> = params.iter().map(|(p, _)| *p).collect();
                let err =
                    EvalError::new(loc.clone(), format!("`{func}()` got an unexpected keyword argument `{name}`"))
                        .about_keyword(&name);
                return Err(match closest(&name, &names) {
                    Some(s) => err.with_help(format!("did you mean `{s}=`?")),
                    None => err.with_help(format!("`{func}` takes: {}", names.join(", "))),
                });
            }
        }
    }
    let bound = Bound { func, params, slots, loc };
    let missing = params.iter().zip(&bound.slots).find(|((_, has_default), slot)| slot.is_none() && !has_default);
    if let Some(((p, _), _)) = missing {
        return Err(bound.missing(p));
    }
    Ok(bound)
}

impl Bound<'_> {
    fn missing(&self, name: &str) -> EvalError {
        EvalError::new(self.loc.clone(), format!("`{}()` is missing the required argument `{name}`", self.func))
    }

    /// Take the value passed for parameter `name`, if one was.
    pub(super) fn optional(&mut self, name: &str) -> Option<Value> {
        let i = self.params.iter().position(|(p, _)| *p == name);
        debug_assert!(i.is_some(), "`{}` has no parameter `{name}`", self.func);
        i.and_then(|i| self.slots[i].take())
    }

    /// The value of required parameter `name`.
    pub(super) fn required(&mut self, name: &str) -> EResult<Value> {
        self.optional(name).ok_or_else(|| self.missing(name))
    }

    /// The value passed for `name`, else `default`.
    pub(super) fn or(&mut self, name: &str, default: Value) -> Value {
        self.optional(name).unwrap_or(default)
    }

    /// The value passed for `name`, else `None`.
    pub(super) fn or_none(&mut self, name: &str) -> Value {
        self.or(name, Value::None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: [Param<'static>; 3] = [("target", false), ("replacement", true), ("description", true)];

    fn loc() -> Loc {
        Loc::line("c.py", 3)
    }

    fn run(args: Vec<Value>, kwargs: Vec<(&str, Value)>) -> Result<Vec<Option<Value>>, String> {
        let loc = loc();
        let keywords = kwargs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let mut b = bind("f", &PARAMS, Args { positional: args, keywords }, &loc).map_err(|e| e.to_string())?;
        let target = b.required("target").map_err(|e| e.to_string())?;
        Ok(vec![Some(target), b.optional("replacement"), b.optional("description")])
    }

    #[test]
    fn positionals_then_keywords() {
        let got = run(vec![Value::Int(1)], vec![("description", Value::Int(3))]).unwrap();
        assert_eq!(format!("{got:?}"), format!("{:?}", [Some(Value::Int(1)), None, Some(Value::Int(3))]));
    }

    #[test]
    fn errors_say_what_python_says() {
        assert_eq!(run(vec![], vec![]).unwrap_err(), "c.py:3: `f()` is missing the required argument `target`");
        assert_eq!(
            run(vec![Value::Int(1)], vec![("target", Value::Int(2))]).unwrap_err(),
            "c.py:3: `f()` got multiple values for `target`"
        );
        assert_eq!(
            run(vec![Value::None; 4], vec![]).unwrap_err(),
            "c.py:3: `f()` takes at most 3 positional arguments (4 given)"
        );
        assert_eq!(
            run(vec![Value::None], vec![("replacment", Value::None)]).unwrap_err(),
            "c.py:3: `f()` got an unexpected keyword argument `replacment`\n  help: did you mean `replacement=`?"
        );
    }

    #[test]
    fn a_required_value_taken_twice_is_an_error_not_a_panic() {
        let loc = loc();
        let mut b = bind("f", &PARAMS, Args::positional(vec![Value::Int(1)]), &loc).unwrap();
        assert!(b.required("target").is_ok());
        assert_eq!(b.required("target").unwrap_err().message, "`f()` is missing the required argument `target`");
    }
}
