//! Two versions of a target, compared: what changed in its parameter list,
//! its decorators and (for classes) its bases.

use super::signature::{DecoratorInfo, ParamKind, Signature};

/// How a parameter list changed between the two versions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignatureDiff {
    pub from: Signature,
    pub to: Signature,
    pub removed: Vec<String>,
    pub added: Vec<String>,
    /// `(old, new)`: a parameter removed where one of the same kind, and
    /// optional or required like it, was added at the same position.
    pub renamed: Vec<(String, String)>,
    /// The positional parameters both versions have, in each version's order,
    /// when that order changed.
    pub reordered: Option<(Vec<String>, Vec<String>)>,
    pub kind_changed: Vec<(String, ParamKind, ParamKind)>,
    pub default_changed: Vec<(String, Option<String>, Option<String>)>,
    /// Parameters the replacement declares that the old upstream had and
    /// the new one no longer has.
    pub replacement_stale: Vec<String>,
}

/// `None` when the contract is the same (annotations are not compared:
/// `Optional[X]` → `X | None` is not a change for callers).
pub fn signatures(from: &Signature, to: &Signature, replacement: Option<&Signature>) -> Option<SignatureDiff> {
    let mut d = SignatureDiff { from: from.clone(), to: to.clone(), ..Default::default() };
    let mut removed: Vec<(usize, &str)> =
        from.params.iter().enumerate().filter(|(_, p)| !to.has(&p.name)).map(|(i, p)| (i, p.name.as_str())).collect();
    let mut added: Vec<(usize, &str)> =
        to.params.iter().enumerate().filter(|(_, p)| !from.has(&p.name)).map(|(i, p)| (i, p.name.as_str())).collect();
    removed.retain(|&(i, old)| {
        let (was, now) = (&from.params[i], |j: usize| &to.params[j]);
        let pair = added
            .iter()
            .position(|&(j, _)| j == i && now(j).kind == was.kind && now(j).default.is_some() == was.default.is_some());
        match pair {
            Some(k) => {
                d.renamed.push((old.to_string(), added.remove(k).1.to_string()));
                false
            }
            None => true,
        }
    });
    d.removed = removed.into_iter().map(|(_, n)| n.to_string()).collect();
    d.added = added.into_iter().map(|(_, n)| n.to_string()).collect();

    let positional = |s: &Signature, other: &Signature| -> Vec<String> {
        s.params
            .iter()
            .filter(|p| p.kind.is_positional() && other.get(&p.name).is_some_and(|o| o.kind.is_positional()))
            .map(|p| p.name.clone())
            .collect()
    };
    let (a, b) = (positional(from, to), positional(to, from));
    if a != b {
        d.reordered = Some((a, b));
    }
    for p in &from.params {
        let Some(q) = to.get(&p.name) else { continue };
        if p.kind != q.kind {
            d.kind_changed.push((p.name.clone(), p.kind, q.kind));
        }
        if p.default != q.default {
            d.default_changed.push((p.name.clone(), p.default.clone(), q.default.clone()));
        }
    }
    if d.removed.is_empty()
        && d.added.is_empty()
        && d.renamed.is_empty()
        && d.reordered.is_none()
        && d.kind_changed.is_empty()
        && d.default_changed.is_empty()
    {
        return None;
    }
    if let Some(r) = replacement {
        d.replacement_stale =
            r.params.iter().filter(|p| from.has(&p.name) && !to.has(&p.name)).map(|p| p.name.clone()).collect();
    }
    Some(d)
}

/// Decorators added, removed, or kept with other arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecoratorDiff {
    pub removed: Vec<String>,
    pub added: Vec<String>,
    /// `(old text, new text)` of a decorator with the same name.
    pub changed: Vec<(String, String)>,
}

/// Matched by name (`@auto_docstring` and `@auto_docstring(...)` are the
/// same decorator with other arguments), in order for repeated names.
pub fn decorators(from: &[DecoratorInfo], to: &[DecoratorInfo]) -> Option<DecoratorDiff> {
    let mut d = DecoratorDiff::default();
    let mut names: Vec<&str> = Vec::new();
    for x in from.iter().chain(to) {
        if !names.contains(&x.name.as_str()) {
            names.push(&x.name);
        }
    }
    for name in names {
        let old: Vec<&str> = from.iter().filter(|x| x.name == name).map(|x| x.text.as_str()).collect();
        let new: Vec<&str> = to.iter().filter(|x| x.name == name).map(|x| x.text.as_str()).collect();
        for i in 0..old.len().max(new.len()) {
            match (old.get(i), new.get(i)) {
                (Some(a), Some(b)) if a != b => d.changed.push((a.to_string(), b.to_string())),
                (Some(a), None) => d.removed.push(a.to_string()),
                (None, Some(b)) => d.added.push(b.to_string()),
                _ => {}
            }
        }
    }
    (d != DecoratorDiff::default()).then_some(d)
}

/// A class's bases before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasesDiff {
    pub from: Vec<String>,
    pub to: Vec<String>,
}

pub fn bases(from: &[String], to: &[String]) -> Option<BasesDiff> {
    (from != to).then(|| BasesDiff { from: from.to_vec(), to: to.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survey::signature::parse_signature;

    fn sig(params: &str) -> Signature {
        parse_signature(&format!("def f({params}): pass\n"), false).unwrap()
    }

    #[test]
    fn same_signature_is_no_change() {
        assert_eq!(signatures(&sig("self, x: int=1"), &sig("self, x: 'int | None' = 1"), None), None);
    }

    #[test]
    fn removed_added_renamed() {
        let d = signatures(&sig("self, a, b, c=None"), &sig("self, a, bb, c=None, d=1"), Some(&sig("self, a, b, c")))
            .unwrap();
        assert_eq!(d.renamed, [("b".to_string(), "bb".to_string())]);
        assert_eq!(d.added, ["d"]);
        assert!(d.removed.is_empty());
        assert!(d.reordered.is_none());
        assert_eq!(d.replacement_stale, ["b"]);
    }

    #[test]
    fn reorder_kind_and_default() {
        let d = signatures(&sig("self, a, b=1, c=2"), &sig("self, b=3, a=None, *, c=2"), None).unwrap();
        assert_eq!(
            d.reordered,
            Some((vec!["self".into(), "a".into(), "b".into()], vec!["self".into(), "b".into(), "a".into()]))
        );
        assert_eq!(d.kind_changed, [("c".to_string(), ParamKind::PositionalOrKeyword, ParamKind::KeywordOnly)]);
        assert_eq!(
            d.default_changed,
            [
                ("a".to_string(), None, Some("None".to_string())),
                ("b".to_string(), Some("1".to_string()), Some("3".to_string()))
            ]
        );
    }

    #[test]
    fn decorators_by_name() {
        let info = |name: &str, text: &str| DecoratorInfo { name: name.into(), text: text.into() };
        let d = decorators(
            &[info("auto_docstring", "@auto_docstring"), info("can_return_tuple", "@can_return_tuple")],
            &[info("auto_docstring", "@auto_docstring(custom_intro='x')"), info("capture_outputs", "@capture_outputs")],
        )
        .unwrap();
        assert_eq!(d.removed, ["@can_return_tuple"]);
        assert_eq!(d.added, ["@capture_outputs"]);
        assert_eq!(d.changed, [("@auto_docstring".to_string(), "@auto_docstring(custom_intro='x')".to_string())]);
        assert_eq!(decorators(&[info("a", "@a")], &[info("a", "@a")]), None);
    }
}
