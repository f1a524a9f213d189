//! The static evaluator: runs the declarative subset of Python a patch config
//! is written in (imports, assignments, `def`/`class` with decorators, DSL
//! calls, `if TYPE_CHECKING:`) without executing anything.
//!
//! Imports are lazy: `from m import x` binds a reference that is only looked
//! at when the DSL needs the value. Only modules inside the project are ever
//! read; everything else stays opaque.
//!
//! Here: the evaluator and its frames, modules and lazy references, name
//! lookup and calls (dispatched to `builtins`, `dsl` and `methods/`);
//! `stmt.rs` runs statements, `expr.rs` evaluates expressions.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use ruff_text_size::Ranged;

mod expr;
mod stmt;

use super::args::Args;
pub use super::error::{EResult, EvalError, Warning};
use super::loader::{LoadError, ModuleLoader};
use super::plan::Loc;
use super::source::LocOf;
use super::value::*;
use patchgen_python::pysource::ParsedFile;

pub type Namespace = Shared<HashMap<String, Value>>;

enum ModuleState {
    Evaluating(Namespace),
    Done(Namespace),
}

/// Deepest expression/statement nesting evaluated before giving up.
const MAX_DEPTH: usize = 200;
/// Longest chain of re-exports followed for one name.
const MAX_REEXPORT_HOPS: usize = 32;

/// One top-level evaluation: every config is evaluated afresh, with the
/// modules it imports evaluated once within it.
pub struct Evaluator<'a> {
    pub(super) loader: &'a dyn ModuleLoader,
    modules: HashMap<String, ModuleState>,
    pub warnings: Vec<Warning>,
    depth: usize,
    /// Bytes of source text the plan being built carries so far (each
    /// registration of a function copies its source, decorators included).
    pub(crate) plan_text: usize,
}

/// Where evaluation currently is: the module and its namespace.
pub(super) struct Frame {
    pub module: String,
    pub file: Arc<ParsedFile>,
    pub ns: Namespace,
    /// Scopes of comprehensions being evaluated (innermost last).
    pub locals: Vec<HashMap<String, Value>>,
    pub is_package: bool,
}

impl Frame {
    pub fn loc(&self, node: &impl Ranged) -> Loc {
        self.file.loc(node.range())
    }
}

/// A patch-config module (`*_patch_gen_config`): written to be evaluated.
pub fn is_config_module(module: &str) -> bool {
    module.rsplit('.').next().is_some_and(|last| last.ends_with("_patch_gen_config"))
}

/// Modules whose names are the patchgen DSL itself.
pub fn is_dsl_module(module: &str) -> bool {
    matches!(module, "patchgen" | "patchgen.patch_spec" | "veomni.patchgen" | "veomni.patchgen.patch_spec")
        || module.ends_with(".patchgen.patch_spec")
}

impl<'a> Evaluator<'a> {
    pub fn new(loader: &'a dyn ModuleLoader) -> Self {
        Evaluator { loader, modules: HashMap::new(), warnings: Vec::new(), depth: 0, plan_text: 0 }
    }

    pub(super) fn warn(&mut self, loc: Loc, message: impl Into<String>) {
        self.warnings.push(Warning { loc, message: message.into() });
    }

    /// Evaluate a project module (once per evaluator) and return its namespace.
    pub fn module_namespace(&mut self, module: &str, import_loc: Option<&Loc>) -> EResult<Namespace> {
        match self.modules.get(module) {
            Some(ModuleState::Done(ns)) | Some(ModuleState::Evaluating(ns)) => return Ok(ns.clone()),
            None => {}
        }
        let loaded = match self.loader.load(module) {
            Some(Ok(loaded)) => loaded,
            Some(Err(LoadError::Syntax { path, line, message })) => {
                return Err(EvalError::new(Loc::line(path, line), format!("syntax error: {message}"))
                    .with_help("fix the Python syntax of this file"));
            }
            Some(Err(LoadError::Conflict { path, line })) => {
                let mut e = EvalError::new(
                    Loc::line(path, line),
                    "unresolved bump conflict: this file still holds conflict markers",
                )
                .with_help(
                    "resolve the conflict between `<<<<<<<` and `>>>>>>>` (keep what the patch needs from both sides), delete the marker lines, then rerun",
                );
                e.code = Some(patchgen_diagnostics::codes::UNRESOLVED_BUMP_CONFLICT);
                return Err(e);
            }
            Some(Err(LoadError::Io { path, message })) => {
                return Err(EvalError::new(Loc::line(path, 0), format!("cannot read: {message}")));
            }
            None => {
                let loc = import_loc.cloned().unwrap_or(Loc::line(std::path::PathBuf::new(), 0));
                return Err(EvalError::new(loc, format!("no module named `{module}` in the project")).with_help(
                    "check the dotted name; config modules are looked up under the project's package root",
                ));
            }
        };
        let ns: Namespace = shared(HashMap::new());
        ns.borrow_mut().insert("__name__".into(), Value::str(module));
        ns.borrow_mut().insert("__file__".into(), Value::str(&loaded.file.path.to_string_lossy()));
        self.modules.insert(module.to_string(), ModuleState::Evaluating(ns.clone()));
        let mut frame = Frame {
            module: module.to_string(),
            file: loaded.file.clone(),
            ns: ns.clone(),
            locals: Vec::new(),
            is_package: loaded.is_package,
        };
        let body = loaded.file.clone();
        for stmt in body.body() {
            self.exec_stmt(&mut frame, stmt)?;
        }
        self.modules.insert(module.to_string(), ModuleState::Done(ns.clone()));
        Ok(ns)
    }

    fn is_evaluating(&self, module: &str) -> bool {
        matches!(self.modules.get(module), Some(ModuleState::Evaluating(_)))
    }

    /// Resolve a lazy import: a project module is evaluated; anything else
    /// is opaque.
    pub(super) fn force(&mut self, value: Value) -> EResult<Value> {
        let mut value = value;
        let mut first: Option<Loc> = None;
        for _ in 0..MAX_REEXPORT_HOPS {
            let Value::Lazy(lazy) = &value else { return Ok(value) };
            let lazy = lazy.clone();
            first.get_or_insert_with(|| lazy.loc.clone());
            if !self.loader.exists(&lazy.module) {
                return Ok(Value::Opaque(Rc::new(Opaque {
                    what: format!("`{}` from `{}`", lazy.attr, lazy.module),
                    loc: lazy.loc.clone(),
                })));
            }
            let ns = self.module_namespace(&lazy.module, Some(&lazy.loc))?;
            let found = ns.borrow().get(&lazy.attr).cloned();
            value = match found {
                Some(v) => v,
                None => {
                    let sub = format!("{}.{}", lazy.module, lazy.attr);
                    if self.loader.exists(&sub) {
                        Value::Module(Rc::from(sub.as_str()))
                    } else if self.is_evaluating(&lazy.module) {
                        return Err(EvalError::new(
                            lazy.loc.clone(),
                            format!(
                                "cannot import name `{}` from partially initialized module `{}` (circular import)",
                                lazy.attr, lazy.module
                            ),
                        )
                        .with_help("break the import cycle between these config modules"));
                    } else {
                        return Err(EvalError::new(
                            lazy.loc.clone(),
                            format!("cannot import name `{}` from `{}`", lazy.attr, lazy.module),
                        )
                        .with_help("check that the name is defined at module level in that file"));
                    }
                }
            };
        }
        let at = first.unwrap_or_else(|| Loc::line(std::path::PathBuf::new(), 0));
        Err(EvalError::new(
            at,
            format!("this import goes through more than {MAX_REEXPORT_HOPS} re-exports before reaching a value"),
        )
        .with_help("import the name from the module that defines it"))
    }

    pub(super) fn lookup_quiet(&self, frame: &Frame, name: &str) -> Option<Value> {
        for scope in frame.locals.iter().rev() {
            if let Some(v) = scope.get(name) {
                return Some(v.clone());
            }
        }
        frame.ns.borrow().get(name).cloned()
    }

    fn lookup(&mut self, frame: &Frame, name: &str, loc: Loc) -> EResult<Value> {
        if let Some(v) = self.lookup_quiet(frame, name) {
            return Ok(v);
        }
        if let Some(v) = super::builtins::builtin_name(name) {
            return Ok(v);
        }
        let star = frame.ns.borrow().keys().find(|k| k.starts_with('*')).cloned();
        if let Some(star) = star {
            return Ok(Value::Opaque(Rc::new(Opaque { what: format!("`{name}` (maybe from {})", &star[1..]), loc })));
        }
        Err(EvalError::new(loc, format!("name `{name}` is not defined"))
            .with_help("define or import it above this line"))
    }

    /// Call `func` (a builtin, a method, a pending patch decorator; anything
    /// else is code patchgen does not run).
    pub(super) fn call(&mut self, frame: &mut Frame, func: Value, args: Args, loc: &Loc) -> EResult<Value> {
        match func {
            Value::Builtin(b) => super::builtins::call(self, frame, b, args, loc),
            Value::Method(recv, name) => self.call_method(frame, *recv, &name, args, loc),
            Value::Decorator(pending) => {
                let target = match <[Value; 1]>::try_from(args.positional) {
                    Ok([target]) if args.keywords.is_empty() => target,
                    _ => {
                        return Err(EvalError::new(
                            loc.clone(),
                            "a patch decorator takes exactly one function or class",
                        ));
                    }
                };
                super::dsl::register_decorated(self, &pending, target.clone(), loc)?;
                Ok(target)
            }
            Value::Unknown(u) => Ok(Value::Unknown(u)),
            Value::None => Err(EvalError::new(loc.clone(), "'NoneType' object is not callable")),
            other => {
                // Calls into code patchgen does not run. Refuse when the
                // callee could modify a config behind our back.
                for a in args.positional.iter().chain(args.keywords.iter().map(|(_, v)| v)) {
                    if a.can_reach_config() {
                        return Err(EvalError::new(
                            loc.clone(),
                            format!(
                                "cannot evaluate a call to {} statically: it receives {}, which it might modify",
                                other.type_name(),
                                a.type_name()
                            ),
                        )
                        .with_help("configs are read, never executed: register patches with the DSL directly"));
                    }
                }
                Ok(opaque(&format!("result of calling {}", other.type_name()), loc.clone()))
            }
        }
    }

    /// Call method `name` of `recv`.
    pub(super) fn call_method(
        &mut self,
        frame: &mut Frame,
        recv: Value,
        name: &str,
        args: Args,
        loc: &Loc,
    ) -> EResult<Value> {
        match &recv {
            Value::Config(c) => super::dsl::call_config_method(self, frame, c.clone(), name, args, loc),
            _ => super::methods::call_method(self, frame, recv, name, args, loc),
        }
    }
}

/// Characters or items of a string, list or tuple (0 for anything else).
fn value_size(v: &Value) -> usize {
    match v {
        Value::Str(s) => s.len(),
        Value::List(l) => l.borrow().len(),
        Value::Tuple(t) => t.len(),
        _ => 0,
    }
}

pub(crate) fn too_large(loc: &Loc) -> EvalError {
    EvalError::new(loc.clone(), format!("value too large to evaluate statically (over {MAX_VALUE_SIZE} items)"))
        .with_help("a patch config has no reason to build values this large")
}

pub(super) fn opaque(what: &str, loc: Loc) -> Value {
    Value::Opaque(Rc::new(Opaque { what: what.to_string(), loc }))
}

/// A value's origin, for help texts.
pub(super) fn describe_origin(v: &Value) -> String {
    match v {
        Value::Opaque(o) => format!("{} (from {}) is not known statically", o.what, o.loc),
        Value::Unknown(o) => format!("{} (at {})", o.what, o.loc),
        Value::Lazy(l) => format!("`{}` is imported from `{}` at {}", l.attr, l.module, l.loc),
        other => format!("the value is {}", other.type_name()),
    }
}

/// A dotted name as Python's AST spells it (no whitespace).
pub fn dotted(name: &str) -> String {
    if name.contains(|c: char| c.is_whitespace() || c == '\\') {
        name.chars().filter(|c| !c.is_whitespace() && *c != '\\').collect()
    } else {
        name.to_string()
    }
}
