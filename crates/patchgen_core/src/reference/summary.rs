//! What changed between two versions of an upstream module, by symbol:
//! top-level classes and functions, and the methods of classes both
//! versions have, each `added`, `removed` or `changed` (source text of the
//! definition differs, decorators included). Survey's vocabulary, for a
//! whole module rather than a config's targets.

use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;
use serde::Serialize;

use patchgen_python::pysource::ParsedFile;

/// The symbols of one kind that changed between two versions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Classes, functions and methods changed between two module texts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModuleChanges {
    pub classes: Changes,
    pub functions: Changes,
    /// `Class.method` of classes present in both versions.
    pub methods: Changes,
}

/// (name, definition text) of the top-level classes and functions, and the
/// methods of each class, in file order (the last definition of a name wins,
/// as Python keeps it).
struct Symbols<'t> {
    classes: Vec<Class<'t>>,
    functions: Vec<Named<'t>>,
}

/// A name and its definition's text.
type Named<'t> = (String, &'t str);

/// A class: its name, its definition's text and its methods.
type Class<'t> = (String, &'t str, Vec<Named<'t>>);

fn keep_last<T>(items: &mut Vec<(String, T)>, name: String, value: T) {
    items.retain(|(n, _)| *n != name);
    items.push((name, value));
}

fn symbols(file: &ParsedFile) -> Symbols<'_> {
    let text = file.text.as_str();
    let mut out = Symbols { classes: Vec::new(), functions: Vec::new() };
    for stmt in file.body() {
        match stmt {
            Stmt::ClassDef(c) => {
                let mut methods = Vec::new();
                for s in &c.body {
                    if let Stmt::FunctionDef(f) = s {
                        keep_last(&mut methods, f.name.id.to_string(), &text[f.range()]);
                    }
                }
                out.classes.retain(|(n, _, _)| n != c.name.id.as_str());
                out.classes.push((c.name.id.to_string(), &text[c.range()], methods));
            }
            Stmt::FunctionDef(f) => keep_last(&mut out.functions, f.name.id.to_string(), &text[f.range()]),
            _ => {}
        }
    }
    out
}

fn compare(old: &[(String, &str)], new: &[(String, &str)], into: &mut Changes, prefix: &str) {
    for (name, text) in new {
        match old.iter().find(|(n, _)| n == name) {
            None => into.added.push(format!("{prefix}{name}")),
            Some((_, t)) if t != text => into.changed.push(format!("{prefix}{name}")),
            Some(_) => {}
        }
    }
    for (name, _) in old {
        if !new.iter().any(|(n, _)| n == name) {
            into.removed.push(format!("{prefix}{name}"));
        }
    }
}

/// Compare two parsed versions of a module.
pub fn module_changes(old: &ParsedFile, new: &ParsedFile) -> ModuleChanges {
    let (a, b) = (symbols(old), symbols(new));
    let mut out = ModuleChanges::default();
    fn flat<'t>(s: &Symbols<'t>) -> Vec<(String, &'t str)> {
        s.classes.iter().map(|(n, t, _)| (n.clone(), *t)).collect()
    }
    let (ca, cb) = (flat(&a), flat(&b));
    compare(&ca, &cb, &mut out.classes, "");
    compare(&a.functions, &b.functions, &mut out.functions, "");
    for (name, _, new_methods) in &b.classes {
        if let Some((_, _, old_methods)) = a.classes.iter().find(|(n, _, _)| n == name) {
            compare(old_methods, new_methods, &mut out.methods, &format!("{name}."));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ParsedFile {
        ParsedFile::parse("m.py".into(), text).unwrap()
    }

    #[test]
    fn added_removed_changed() {
        let old = parse(
            "class A:\n    def f(self): pass\n    def g(self): pass\nclass B: pass\ndef h(x): pass\ndef k(): pass\n",
        );
        let new = parse(
            "class A:\n    def f(self, y): pass\n    def n(self): pass\nclass C: pass\ndef h(x): pass\ndef k(): return 1\n",
        );
        let c = module_changes(&old, &new);
        assert_eq!(
            c.classes,
            Changes { added: vec!["C".into()], removed: vec!["B".into()], changed: vec!["A".into()] }
        );
        assert_eq!(c.functions, Changes { added: vec![], removed: vec![], changed: vec!["k".into()] });
        assert_eq!(
            c.methods,
            Changes { added: vec!["A.n".into()], removed: vec!["A.g".into()], changed: vec!["A.f".into()] }
        );
    }
}
