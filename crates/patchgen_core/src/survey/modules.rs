//! One upstream version's modules, each read and parsed at most once however
//! many configs ask for it, and the class lookups the survey needs: a class
//! by name, its bases followed through the module's own imports (other
//! modules of the same upstream), and a method found along that chain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};

use super::source::Upstream;
use crate::codegen::imports::absolute_module;
use crate::upstream::UpstreamError;
use patchgen_python::pysource::{ParsedFile, defs};

/// Why a module of an upstream version could not be used.
#[derive(Clone, Debug)]
pub enum ModuleError {
    NotFound,
    /// Unreadable or not Python: the message names the file and line.
    Broken(String),
}

type Slot = Arc<OnceLock<Result<Arc<ParsedFile>, ModuleError>>>;

/// An upstream version with its parsed-module cache.
pub struct Version {
    pub upstream: Upstream,
    modules: Mutex<HashMap<String, Slot>>,
}

/// A top-level class of an upstream module.
#[derive(Clone)]
pub struct ClassRef {
    pub file: Arc<ParsedFile>,
    pub module: String,
    index: usize,
}

impl ClassRef {
    pub fn def(&self) -> &StmtClassDef {
        match &self.file.body()[self.index] {
            Stmt::ClassDef(c) => c,
            _ => unreachable!("ClassRef points at a class"),
        }
    }

    pub fn name(&self) -> &str {
        self.def().name.id.as_str()
    }

    /// The last `def name` in the class body (the one Python keeps).
    pub fn own_method(&self, name: &str) -> Option<&StmtFunctionDef> {
        defs::method(self.def(), name)
    }
}

/// A class and its bases, depth first, left to right (C3 order for the
/// single-inheritance chains modeling files use), plus the bases that could
/// not be followed (`nn.Module`, packages outside the upstream).
pub struct Lineage {
    pub classes: Vec<ClassRef>,
    pub unresolved: Vec<String>,
}

impl Lineage {
    /// The class that defines `method` first along the chain.
    pub fn method(&self, method: &str) -> Option<(&ClassRef, &StmtFunctionDef)> {
        self.classes.iter().find_map(|c| c.own_method(method).map(|f| (c, f)))
    }
}

/// How far imports and bases are followed: enough for re-exports and the
/// deepest modeling hierarchies, and a stop for cycles.
const MAX_DEPTH: usize = 12;

/// The last top-level `def name` of a module.
pub fn function<'f>(file: &'f ParsedFile, name: &str) -> Option<&'f StmtFunctionDef> {
    defs::function(file.body(), name)
}

impl Version {
    pub fn new(upstream: Upstream) -> Version {
        Version { upstream, modules: Mutex::new(HashMap::new()) }
    }

    /// The parsed source of `module` (a `.py` file, as the generator reads it).
    pub fn module(&self, module: &str) -> Result<Arc<ParsedFile>, ModuleError> {
        let slot = {
            let mut map = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(module.to_string()).or_default().clone()
        };
        slot.get_or_init(|| {
            let source = self.upstream.search.find_module(module).map_err(|e| match e {
                UpstreamError::NotFound { .. } => ModuleError::NotFound,
                other => ModuleError::Broken(other.to_string()),
            })?;
            ParsedFile::parse_shared(source.origin.clone(), &source.text).map_err(|e| {
                ModuleError::Broken(format!("{}:{}: syntax error: {}", source.origin.display(), e.line, e.message))
            })
        })
        .clone()
    }

    /// Use `file` as the parse of `module` unless one is cached already
    /// (callers that parsed it for another purpose share the work).
    pub fn seed(&self, module: &str, file: Arc<ParsedFile>) {
        let slot = {
            let mut map = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(module.to_string()).or_default().clone()
        };
        let _ = slot.set(Ok(file));
    }

    /// The top-level class `name` of `module`, following `from X import name`
    /// re-exports to the module that defines it.
    pub fn class(&self, module: &str, name: &str) -> Option<ClassRef> {
        self.class_at_depth(module, name, 0)
    }

    fn class_at_depth(&self, module: &str, name: &str, depth: usize) -> Option<ClassRef> {
        if depth > MAX_DEPTH {
            return None;
        }
        let file = self.module(module).ok()?;
        let body = file.body();
        if let Some((index, _)) = defs::class(body, name) {
            return Some(ClassRef { file: file.clone(), module: module.to_string(), index });
        }
        let (from, original) = imported_from(module, body, name)?;
        self.class_at_depth(&from, &original, depth + 1)
    }

    /// `class` and the bases it inherits from.
    pub fn lineage(&self, class: &ClassRef) -> Lineage {
        let mut out = Lineage { classes: Vec::new(), unresolved: Vec::new() };
        self.walk_bases(class, 0, &mut out);
        out
    }

    fn walk_bases(&self, class: &ClassRef, depth: usize, out: &mut Lineage) {
        if depth > MAX_DEPTH || out.classes.iter().any(|c| c.module == class.module && c.name() == class.name()) {
            return;
        }
        out.classes.push(class.clone());
        let Some(args) = &class.def().arguments else {
            return;
        };
        for base in args.args.iter() {
            let found = match base {
                Expr::Name(n) => self.class(&class.module, n.id.as_str()),
                _ => None,
            };
            match found {
                Some(b) => self.walk_bases(&b, depth + 1, out),
                None => {
                    let text = patchgen_python::semantic::facts::dotted(base).unwrap_or_else(|| "?".into());
                    if text != "object" && !out.unresolved.contains(&text) {
                        out.unresolved.push(text);
                    }
                }
            }
        }
    }
}

/// Where a module-level `from X import name [as alias]` binding `name`
/// comes from: the absolute module and the name there.
fn imported_from(module: &str, body: &[Stmt], name: &str) -> Option<(String, String)> {
    for stmt in body.iter().rev() {
        let Stmt::ImportFrom(i) = stmt else { continue };
        for alias in &i.names {
            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
            if bound.id.as_str() != name {
                continue;
            }
            let from = i.module.as_ref().map(|m| m.id.to_string());
            let absolute = if i.level > 0 {
                // A module's own package is the base of its relative imports.
                absolute_module(module, from.as_deref(), i.level)?
            } else {
                from?
            };
            return Some((absolute, alias.name.id.to_string()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_imports_resolve_from_the_module() {
        let parsed = ParsedFile::parse("m.py".into(), "from ..llama.modeling_llama import LlamaMLP as MLP\n").unwrap();
        assert_eq!(
            imported_from("transformers.models.qwen3.modeling_qwen3", parsed.body(), "MLP"),
            Some(("transformers.models.llama.modeling_llama".into(), "LlamaMLP".into()))
        );
        assert_eq!(imported_from("a.b", parsed.body(), "LlamaMLP"), None);
    }
}
