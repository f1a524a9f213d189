//! Small, pure facts about parsed Python that the model-contract rules
//! (PG3xx), the MoE rules (PG4xx) and the project-convention rules (PG5xx)
//! share: classes and methods of a module and their local lineage,
//! parameters, the definition a config line names. The walks over
//! statements and expressions and the facts about one node (dotted names,
//! docstrings, loaded names) are `patchgen_python::semantic`'s. Nothing
//! here reads files or knows about rules.

use ruff_python_ast::{Parameters, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

use patchgen_python::semantic::facts;
use patchgen_python::semantic::walk::{self, Scope};

use patchgen_python::pysource::ParsedFile;

/// Top-level class `name` of a module body (the first one, as a reader
/// of the source would find it).
pub fn class<'a>(body: &'a [Stmt], name: &str) -> Option<&'a StmtClassDef> {
    body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.id.as_str() == name => Some(c),
        _ => None,
    })
}

/// Top-level function `name` of a module body.
pub fn function<'a>(body: &'a [Stmt], name: &str) -> Option<&'a StmtFunctionDef> {
    body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// Method `name` defined directly in `class` (the last definition wins, as
/// in Python).
pub fn method<'a>(class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    class.body.iter().rev().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name => Some(f),
        _ => None,
    })
}

/// Names of a class's bases as written (`nn.Module` → `nn.Module`).
pub fn base_names(class: &StmtClassDef) -> Vec<String> {
    class.bases().iter().filter_map(facts::dotted).collect()
}

/// `class` and then its bases defined in the same module, depth first in
/// MRO-like order (each class once).
pub fn local_lineage<'a>(body: &'a [Stmt], class: &'a StmtClassDef) -> Vec<&'a StmtClassDef> {
    let mut out: Vec<&StmtClassDef> = vec![class];
    let mut i = 0;
    while i < out.len() {
        for base in base_names(out[i]) {
            if let Some(c) = self::class(body, &base)
                && !out.iter().any(|o| std::ptr::eq(*o, c))
            {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

/// Method `name` of `class` or of the first local base that defines it.
pub fn resolve_method<'a>(body: &'a [Stmt], class: &'a StmtClassDef, name: &str) -> Option<&'a StmtFunctionDef> {
    local_lineage(body, class).into_iter().find_map(|c| method(c, name))
}

/// Every parameter name, in order (`*args` and `**kwargs` included).
pub fn param_names(parameters: &Parameters) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    out.extend(parameters.posonlyargs.iter().map(|p| p.parameter.name.id.as_str()));
    out.extend(parameters.args.iter().map(|p| p.parameter.name.id.as_str()));
    if let Some(v) = &parameters.vararg {
        out.push(v.name.id.as_str());
    }
    out.extend(parameters.kwonlyargs.iter().map(|p| p.parameter.name.id.as_str()));
    if let Some(k) = &parameters.kwarg {
        out.push(k.name.id.as_str());
    }
    out
}

/// A `def` or `class` statement found in a parsed file.
#[derive(Clone, Copy)]
pub enum Definition<'a> {
    Function(&'a StmtFunctionDef),
    Class(&'a StmtClassDef),
}

impl Definition<'_> {
    pub fn range(&self) -> TextRange {
        match self {
            Definition::Function(f) => f.range(),
            Definition::Class(c) => c.range(),
        }
    }
}

/// The `def`/`class` named `name` whose keyword is on 1-based `line` of
/// `file` (how a plan's `SourceObject::defined_at` names it), searched at
/// any depth.
pub fn definition_at<'a>(file: &'a ParsedFile, name: &str, line: usize) -> Option<Definition<'a>> {
    // The plan records the line of the `def` keyword, which is the name's
    // line unless the header is split with a backslash (not worth code).
    walk::statements(file.body(), Scope::All).into_iter().find_map(|stmt| match stmt {
        Stmt::FunctionDef(f) if f.name.id.as_str() == name && file.line_of(f.name.start()) == line => {
            Some(Definition::Function(f))
        }
        Stmt::ClassDef(c) if c.name.id.as_str() == name && file.line_of(c.name.start()) == line => {
            Some(Definition::Class(c))
        }
        _ => None,
    })
}

/// A class whose `__init__` builds experts or a router
/// (`self.experts = ...`, `self.router = ...`): the MoE block, whatever its
/// name (gpt_oss calls it `GptOssMLP`).
pub fn builds_experts(class: &StmtClassDef, text: &str) -> bool {
    class.body.iter().any(|s| match s {
        Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => {
            let t: String = text[f.range()].chars().filter(|c| !c.is_whitespace()).collect();
            t.contains("self.experts=") || t.contains("self.router=")
        }
        _ => false,
    })
}

/// Python source parsed as a file `t.py` (unit tests of the rules).
#[cfg(test)]
pub fn parsed(src: &str) -> ParsedFile {
    ParsedFile::parse(std::path::PathBuf::from("t.py"), src).expect("parses")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(text: &str) -> ParsedFile {
        ParsedFile::parse(PathBuf::from("t.py"), text).expect("parses")
    }

    #[test]
    fn lineage_follows_local_bases_once() {
        let f = parse("class A: pass\nclass B(A): pass\nclass C(B, A, nn.Module): pass\n");
        let c = class(f.body(), "C").unwrap();
        let names: Vec<&str> = local_lineage(f.body(), c).iter().map(|c| c.name.id.as_str()).collect();
        assert_eq!(names, ["C", "B", "A"]);
    }

    #[test]
    fn definition_at_finds_decorated_and_nested() {
        let f = parse("@deco(\n  1)\ndef f(x):\n    def g(): pass\n\nclass K:\n    def m(self): pass\n");
        assert!(matches!(definition_at(&f, "f", 3), Some(Definition::Function(_))));
        assert!(definition_at(&f, "f", 1).is_none());
        assert!(matches!(definition_at(&f, "g", 4), Some(Definition::Function(_))));
        assert!(matches!(definition_at(&f, "K", 6), Some(Definition::Class(_))));
    }
}
