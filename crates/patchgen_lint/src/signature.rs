//! Whether a call's argument shape binds to a parameter list, as Python's
//! `inspect.Signature.bind` decides it for `n` positional arguments and a set
//! of keyword names (values unknown), with its error wording. Parameter lists
//! are [`patchgen_core::survey::signature::Signature`]s read from the AST.

use patchgen_core::survey::signature::{ParamKind, Signature};

/// `sig` without its first parameter when that is `self` (a method called
/// through an instance).
pub fn without_self(sig: &Signature) -> Signature {
    let mut params = sig.params.clone();
    if params.first().is_some_and(|p| p.name == "self" && p.kind.is_positional()) {
        params.remove(0);
    }
    Signature { params }
}

/// `None` when `n_positional` positional arguments and the keyword names
/// `keywords` bind to `sig`; else why not (Python's `TypeError` text).
pub fn rejection(sig: &Signature, n_positional: usize, keywords: &[&str]) -> Option<String> {
    let mut bound: Vec<bool> = vec![false; sig.params.len()];
    let mut left = n_positional;
    for (i, p) in sig.params.iter().enumerate() {
        if left == 0 {
            break;
        }
        match p.kind {
            ParamKind::PositionalOnly | ParamKind::PositionalOrKeyword => {
                bound[i] = true;
                left -= 1;
            }
            ParamKind::VarPositional => {
                bound[i] = true;
                left = 0;
            }
            ParamKind::KeywordOnly | ParamKind::VarKeyword => break,
        }
    }
    if left > 0 {
        return Some("too many positional arguments".into());
    }
    let has_var_kw = sig.params.iter().any(|p| p.kind == ParamKind::VarKeyword);
    let mut used = vec![false; keywords.len()];
    for (i, p) in sig.params.iter().enumerate() {
        if matches!(p.kind, ParamKind::VarPositional | ParamKind::VarKeyword) {
            continue;
        }
        let kw = keywords.iter().position(|k| *k == p.name);
        if bound[i] {
            if let Some(k) = kw {
                if p.kind == ParamKind::PositionalOnly && has_var_kw {
                    continue; // goes to **kwargs
                }
                used[k] = true;
                return Some(format!("multiple values for argument '{}'", p.name));
            }
            continue;
        }
        match kw {
            Some(k) if p.kind == ParamKind::PositionalOnly => {
                if !has_var_kw {
                    used[k] = true;
                    return Some(format!("'{}' parameter is positional only, but was passed as a keyword", p.name));
                }
                if p.default.is_none() {
                    return Some(format!("missing a required argument: '{}'", p.name));
                }
            }
            Some(k) => used[k] = true,
            None if p.default.is_none() => {
                return Some(format!("missing a required argument: '{}'", p.name));
            }
            None => {}
        }
    }
    if !has_var_kw && let Some(k) = keywords.iter().zip(&used).find(|(_, u)| !**u) {
        return Some(format!("got an unexpected keyword argument '{}'", k.0));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_core::survey::signature::parse_signature;

    fn check(def: &str, n: usize, kw: &[&str]) -> Option<String> {
        rejection(&parse_signature(def, false).unwrap(), n, kw)
    }

    // Expected texts: CPython 3.11's `inspect.Signature.bind` on the same
    // shapes (`inspect.signature(f).bind(*[0]*n, **dict.fromkeys(kw))`).
    #[test]
    fn matches_inspect_bind() {
        assert_eq!(check("def f(a, b=1): pass", 1, &[]), None);
        assert_eq!(check("def f(a, b=1): pass", 3, &[]).unwrap(), "too many positional arguments");
        assert_eq!(check("def f(a, b=1): pass", 0, &[]).unwrap(), "missing a required argument: 'a'");
        assert_eq!(check("def f(a, b=1): pass", 1, &["c"]).unwrap(), "got an unexpected keyword argument 'c'");
        assert_eq!(check("def f(a, b=1): pass", 1, &["a"]).unwrap(), "multiple values for argument 'a'");
        assert_eq!(
            check("def f(a, /, b=1): pass", 0, &["a"]).unwrap(),
            "'a' parameter is positional only, but was passed as a keyword"
        );
        assert_eq!(check("def f(a, /, **kw): pass", 1, &["a"]), None);
        assert_eq!(check("def f(*args, k): pass", 5, &["k"]), None);
        assert_eq!(check("def f(*args, k): pass", 5, &[]).unwrap(), "missing a required argument: 'k'");
        assert_eq!(check("def f(a, **kw): pass", 1, &["x", "y"]), None);
        assert_eq!(check("def f(a, *, k=1): pass", 2, &[]).unwrap(), "too many positional arguments");
    }
}
