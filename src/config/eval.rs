//! The static evaluator: runs the declarative subset of Python a patch config
//! is written in (imports, assignments, `def`/`class` with decorators, DSL
//! calls, `if TYPE_CHECKING:`) without executing anything.
//!
//! Imports are lazy: `from m import x` binds a reference that is only looked
//! at when the DSL needs the value. Only modules inside the project are ever
//! read; everything else stays opaque.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

use super::loader::{LoadError, ModuleLoader};
use super::plan::Loc;
use super::source::{DefObj, ParsedFile, keyword_line};
use super::value::*;

/// A located evaluation error: what is wrong and what to do.
#[derive(Debug, Clone)]
pub struct EvalError {
    pub loc: Loc,
    pub message: String,
    pub help: Option<String>,
}

impl EvalError {
    pub fn new(loc: Loc, message: impl Into<String>) -> Self {
        EvalError { loc, message: message.into(), help: None }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.loc, self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

pub type EResult<T> = Result<T, EvalError>;

/// A non-fatal finding, reported with the config's result.
#[derive(Debug, Clone)]
pub struct Warning {
    pub loc: Loc,
    pub message: String,
}

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
        self.file.loc(node.start())
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

fn dsl_name(name: &str) -> Option<Value> {
    Some(Value::Builtin(match name {
        "PatchConfig" => Builtin::PatchConfig,
        "Patch" => Builtin::PatchClass,
        "ImportSpec" => Builtin::ImportSpecClass,
        "PositionedHelper" => Builtin::PositionedHelperClass,
        "PatchType" => Builtin::PatchTypeEnum,
        "create_patch_from_external" => Builtin::CreatePatchFromExternal,
        _ => return None,
    }))
}

/// Names of the standard library patchgen models.
fn stdlib_name(module: &str, name: &str) -> Option<Value> {
    Some(match (module, name) {
        ("typing", "TYPE_CHECKING") | ("typing_extensions", "TYPE_CHECKING") => Value::Bool(false),
        ("copy", "deepcopy") => Value::Builtin(Builtin::DeepCopy),
        ("copy", "copy") => Value::Builtin(Builtin::ShallowCopy),
        ("textwrap", "dedent") => Value::Builtin(Builtin::Dedent),
        _ => return None,
    })
}

fn builtin_name(name: &str) -> Option<Value> {
    Some(match name {
        "list" => Value::Builtin(Builtin::List),
        "tuple" => Value::Builtin(Builtin::Tuple),
        "dict" => Value::Builtin(Builtin::Dict),
        "set" | "frozenset" => Value::Builtin(Builtin::Set),
        "str" => Value::Builtin(Builtin::Str),
        "len" => Value::Builtin(Builtin::Len),
        "sorted" => Value::Builtin(Builtin::Sorted),
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "None" => Value::None,
        // Builtins that only matter at run time: opaque, never an error.
        "print"
        | "isinstance"
        | "getattr"
        | "setattr"
        | "hasattr"
        | "object"
        | "int"
        | "float"
        | "bool"
        | "bytes"
        | "type"
        | "super"
        | "property"
        | "staticmethod"
        | "classmethod"
        | "range"
        | "enumerate"
        | "zip"
        | "map"
        | "filter"
        | "min"
        | "max"
        | "sum"
        | "any"
        | "all"
        | "abs"
        | "callable"
        | "iter"
        | "next"
        | "repr"
        | "id"
        | "hash"
        | "vars"
        | "dir"
        | "globals"
        | "locals"
        | "open"
        | "Exception"
        | "ValueError"
        | "TypeError"
        | "KeyError"
        | "RuntimeError"
        | "ImportError"
        | "AttributeError"
        | "NotImplementedError"
        | "NotImplemented"
        | "Ellipsis"
        | "__import__"
        | "slice"
        | "reversed"
        | "round"
        | "divmod"
        | "pow"
        | "format"
        | "chr"
        | "ord"
        | "hex"
        | "oct"
        | "bin"
        | "memoryview"
        | "bytearray"
        | "complex"
        | "issubclass"
        | "delattr"
        | "__builtins__"
        | "__doc__"
        | "__spec__"
        | "__loader__"
        | "__package__"
        | "AssertionError"
        | "StopIteration"
        | "OSError"
        | "IndexError"
        | "UserWarning"
        | "DeprecationWarning"
        | "Warning" => Value::Opaque(Rc::new(Opaque {
            what: format!("builtin {name}"),
            loc: Loc { path: Default::default(), line: 0 },
        })),
        _ => return None,
    })
}

impl<'a> Evaluator<'a> {
    pub fn new(loader: &'a dyn ModuleLoader) -> Self {
        Evaluator { loader, modules: HashMap::new(), warnings: Vec::new(), depth: 0 }
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
                return Err(EvalError::new(Loc { path, line }, format!("syntax error: {message}"))
                    .with_help("fix the Python syntax of this file"));
            }
            Some(Err(LoadError::Io { path, message })) => {
                return Err(EvalError::new(Loc { path, line: 0 }, format!("cannot read: {message}")));
            }
            None => {
                let loc = import_loc.cloned().unwrap_or(Loc { path: Default::default(), line: 0 });
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

    // ----- statements -------------------------------------------------

    pub(super) fn exec_body(&mut self, frame: &mut Frame, body: &[Stmt]) -> EResult<()> {
        for stmt in body {
            self.exec_stmt(frame, stmt)?;
        }
        Ok(())
    }

    fn exec_stmt(&mut self, frame: &mut Frame, stmt: &Stmt) -> EResult<()> {
        match stmt {
            Stmt::Import(imp) => {
                for alias in &imp.names {
                    let name = dotted(&alias.name.id);
                    match &alias.asname {
                        Some(asname) => {
                            frame.ns.borrow_mut().insert(asname.id.to_string(), Value::Module(Rc::from(name.as_str())));
                        }
                        None => {
                            let top = name.split('.').next().unwrap_or(&name).to_string();
                            frame.ns.borrow_mut().insert(top.clone(), Value::Module(Rc::from(top.as_str())));
                        }
                    }
                }
                Ok(())
            }
            Stmt::ImportFrom(imp) => self.exec_import_from(frame, imp),
            Stmt::Assign(assign) => {
                let value = self.eval(frame, &assign.value)?;
                for target in &assign.targets {
                    self.assign(frame, target, value.clone())?;
                }
                Ok(())
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    let value = self.eval(frame, value)?;
                    self.assign(frame, &assign.target, value)?;
                }
                Ok(())
            }
            Stmt::AugAssign(aug) => {
                let current = self.eval(frame, &aug.target)?;
                let rhs = self.eval(frame, &aug.value)?;
                let loc = frame.loc(aug);
                let new = match (&current, aug.op) {
                    // `lst += iterable` extends in place, keeping aliases.
                    (Value::List(l), ast::Operator::Add) => {
                        let items = self.iterate(frame, &rhs, &loc)?;
                        if l.borrow().len() + items.len() > MAX_VALUE_SIZE {
                            return Err(too_large(&loc));
                        }
                        l.borrow_mut().extend(items);
                        current.clone()
                    }
                    (Value::Set(_), ast::Operator::BitOr) => {
                        let items = self.iterate(frame, &rhs, &loc)?;
                        self.call_method(frame, current.clone(), "update", vec![Value::list(items)], vec![], &loc)?;
                        current.clone()
                    }
                    _ => self.binop(&current, aug.op, &rhs, &loc)?,
                };
                self.assign(frame, &aug.target, new)
            }
            Stmt::Expr(expr) => {
                if let Value::Decorator(d) = self.eval(frame, &expr.value)? {
                    self.warn(
                        frame.loc(stmt),
                        format!(
                            "this call registers nothing: without `replacement=` it returns a decorator, which is discarded (target `{}`)",
                            d.target
                        ),
                    );
                }
                Ok(())
            }
            Stmt::FunctionDef(func) => self.exec_def(frame, stmt, &func.decorator_list, &func.name, false, &func.body),
            Stmt::ClassDef(class) => self.exec_def(frame, stmt, &class.decorator_list, &class.name, true, &class.body),
            Stmt::If(if_stmt) => {
                let test = self.eval(frame, &if_stmt.test)?;
                match test.truthy() {
                    Some(true) => return self.exec_body(frame, &if_stmt.body),
                    Some(false) => {}
                    None => return self.unsupported(frame, stmt, "an `if` whose condition is not known statically"),
                }
                for clause in &if_stmt.elif_else_clauses {
                    match &clause.test {
                        None => return self.exec_body(frame, &clause.body),
                        Some(test) => {
                            let t = self.eval(frame, test)?;
                            match t.truthy() {
                                Some(true) => return self.exec_body(frame, &clause.body),
                                Some(false) => {}
                                None => {
                                    return self.unsupported(
                                        frame,
                                        stmt,
                                        "an `elif` whose condition is not known statically",
                                    );
                                }
                            }
                        }
                    }
                }
                Ok(())
            }
            Stmt::Pass(_) => Ok(()),
            Stmt::Try(_) => self.unsupported(frame, stmt, "a `try` statement"),
            Stmt::For(_) => self.unsupported(frame, stmt, "a `for` loop"),
            Stmt::While(_) => self.unsupported(frame, stmt, "a `while` loop"),
            Stmt::With(_) => self.unsupported(frame, stmt, "a `with` statement"),
            Stmt::Match(_) => self.unsupported(frame, stmt, "a `match` statement"),
            Stmt::Delete(_) => self.unsupported(frame, stmt, "a `del` statement"),
            Stmt::Raise(_) => self.unsupported(frame, stmt, "a `raise` statement"),
            Stmt::Assert(_) => self.unsupported(frame, stmt, "an `assert` statement"),
            Stmt::Global(_) | Stmt::Nonlocal(_) | Stmt::TypeAlias(_) => self.unsupported(frame, stmt, "this statement"),
            Stmt::Return(_) | Stmt::Break(_) | Stmt::Continue(_) | Stmt::IpyEscapeCommand(_) => {
                Err(EvalError::new(frame.loc(stmt), "statement not allowed at module level"))
            }
        }
    }

    /// A statement outside the evaluated subset: harmless when it cannot
    /// touch the config (its names become unknown), an error otherwise.
    fn unsupported(&mut self, frame: &mut Frame, stmt: &Stmt, what: &str) -> EResult<()> {
        let used = super::names::loaded_names(stmt);
        for name in &used {
            let value = self.lookup_quiet(frame, name);
            if let Some(v) = value
                && matches!(v, Value::Config(_) | Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Patch(_))
            {
                return Err(EvalError::new(
                    frame.loc(stmt),
                    format!("patchgen cannot evaluate {what} statically, and it uses `{name}` ({})", v.type_name()),
                )
                .with_help("configs are read, never executed: keep DSL calls at module level, outside loops, `try` and conditions that depend on run-time values"));
            }
        }
        let loc = frame.loc(stmt);
        for name in super::names::bound_names(stmt) {
            frame.ns.borrow_mut().insert(
                name.clone(),
                Value::Unknown(Rc::new(Opaque {
                    what: format!("`{name}`, bound by {what} that patchgen does not evaluate"),
                    loc: loc.clone(),
                })),
            );
        }
        Ok(())
    }

    fn exec_import_from(&mut self, frame: &mut Frame, imp: &ast::StmtImportFrom) -> EResult<()> {
        let loc = frame.loc(imp);
        let module = match &imp.module {
            Some(m) => dotted(&m.id),
            None => String::new(),
        };
        let module = if imp.level > 0 {
            let mut parts: Vec<&str> = frame.module.split('.').collect();
            if !frame.is_package {
                parts.pop();
            }
            for _ in 1..imp.level {
                if parts.pop().is_none() {
                    return Err(EvalError::new(loc, "attempted relative import beyond top-level package"));
                }
            }
            let mut base = parts.join(".");
            if !module.is_empty() {
                if !base.is_empty() {
                    base.push('.');
                }
                base.push_str(&module);
            }
            base
        } else {
            module
        };
        if module == "__future__" {
            return Ok(());
        }
        // Other configs are imported eagerly, as Python would: their
        // module-level DSL calls run now, and an import cycle fails the same
        // way. Anything else stays lazy.
        if is_config_module(&module) && !self.loader.exists(&module) {
            return Err(EvalError::new(loc, format!("no config module named `{module}` in the project"))
                .with_help("check the dotted name against the files under search_root"));
        }
        let eager = is_config_module(&module);
        if eager {
            self.module_namespace(&module, Some(&loc))?;
        }
        for alias in &imp.names {
            let name = alias.name.id.as_str();
            if name == "*" {
                self.star_import(frame, &module, &loc)?;
                continue;
            }
            let bound = alias.asname.as_ref().map(|a| a.id.as_str()).unwrap_or(name);
            let mut value = self.module_attr(&module, name, &loc);
            if eager {
                value = self.force(value)?;
            }
            frame.ns.borrow_mut().insert(bound.to_string(), value);
        }
        Ok(())
    }

    fn star_import(&mut self, frame: &mut Frame, module: &str, loc: &Loc) -> EResult<()> {
        if is_dsl_module(module) {
            for name in
                ["PatchConfig", "Patch", "ImportSpec", "PositionedHelper", "PatchType", "create_patch_from_external"]
            {
                frame.ns.borrow_mut().insert(name.into(), dsl_name(name).expect("known"));
            }
            return Ok(());
        }
        if self.loader.exists(module) {
            let ns = self.module_namespace(module, Some(loc))?;
            let items: Vec<(String, Value)> =
                ns.borrow().iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
            frame.ns.borrow_mut().extend(items);
            return Ok(());
        }
        frame.ns.borrow_mut().insert(
            format!("*{module}"),
            Value::Opaque(Rc::new(Opaque { what: format!("names from `from {module} import *`"), loc: loc.clone() })),
        );
        Ok(())
    }

    /// The value `from module import name` binds (lazily).
    fn module_attr(&self, module: &str, name: &str, loc: &Loc) -> Value {
        if is_dsl_module(module) {
            return dsl_name(name).unwrap_or_else(|| {
                Value::Opaque(Rc::new(Opaque { what: format!("{module}.{name}"), loc: loc.clone() }))
            });
        }
        if let Some(v) = stdlib_name(module, name) {
            return v;
        }
        Value::Lazy(Rc::new(LazyRef { module: module.to_string(), attr: name.to_string(), loc: loc.clone() }))
    }

    /// Resolve a lazy import: a project module is evaluated; anything else
    /// is opaque.
    pub(super) fn force(&mut self, value: Value) -> EResult<Value> {
        let mut value = value;
        for _ in 0..MAX_REEXPORT_HOPS {
            let Value::Lazy(lazy) = &value else { return Ok(value) };
            let lazy = lazy.clone();
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
        Err(EvalError::new(Loc { path: Default::default(), line: 0 }, "too many re-exports while resolving an import"))
    }

    fn exec_def(
        &mut self,
        frame: &mut Frame,
        stmt: &Stmt,
        decorators: &[ast::Decorator],
        name: &ast::Identifier,
        is_class: bool,
        body: &[Stmt],
    ) -> EResult<()> {
        let def_line = keyword_line(&frame.file, name.start());
        let first_line = match decorators.first() {
            Some(d) => frame.file.line_of(d.expression.start()),
            None => def_line,
        };
        if is_class {
            self.check_class_body(frame, body)?;
        }
        let def = Rc::new(DefObj {
            name: name.id.to_string(),
            qualname: name.id.to_string(),
            module: frame.module.clone(),
            file: frame.file.clone(),
            is_class,
            first_line,
            loc: Loc { path: frame.file.path.clone(), line: def_line },
        });
        let _ = stmt;
        // Decorator expressions are evaluated top-down, applied bottom-up.
        let mut decos = Vec::with_capacity(decorators.len());
        for d in decorators {
            decos.push((self.eval(frame, &d.expression)?, frame.loc(&d.expression)));
        }
        let mut value = Value::Def(def);
        for (deco, loc) in decos.into_iter().rev() {
            value = self.apply_decorator(frame, deco, value, &loc)?;
        }
        frame.ns.borrow_mut().insert(name.id.to_string(), value);
        Ok(())
    }

    /// DSL decorators inside a class body would register at class-creation
    /// time; patchgen does not run class bodies, so say so.
    fn check_class_body(&mut self, frame: &mut Frame, body: &[Stmt]) -> EResult<()> {
        for stmt in body {
            let decorators = match stmt {
                Stmt::FunctionDef(f) => &f.decorator_list,
                Stmt::ClassDef(c) => &c.decorator_list,
                _ => continue,
            };
            for d in decorators {
                let mut root = &d.expression;
                loop {
                    match root {
                        Expr::Call(c) => root = &c.func,
                        Expr::Attribute(a) => root = &a.value,
                        _ => break,
                    }
                }
                if let Expr::Name(n) = root
                    && let Some(Value::Config(_)) = self.lookup_quiet(frame, n.id.as_str())
                {
                    return Err(EvalError::new(frame.loc(d), "patch decorators inside a class body are not supported")
                        .with_help("define the replacement at module level and register it there"));
                }
            }
        }
        Ok(())
    }

    fn apply_decorator(&mut self, frame: &mut Frame, deco: Value, target: Value, loc: &Loc) -> EResult<Value> {
        match deco {
            Value::Decorator(pending) => {
                super::dsl::register_decorated(self, &pending, target.clone(), loc)?;
                Ok(target)
            }
            Value::Method(recv, name) => {
                if let Value::Config(_) = *recv {
                    if &*name == "add_helper" {
                        self.call_method(frame, *recv, &name, vec![target.clone()], vec![], loc)?;
                        return Ok(target);
                    }
                    return Err(EvalError::new(
                        loc.clone(),
                        format!("`@config.{name}` needs arguments"),
                    )
                    .with_help(format!("write `@config.{name}(\"Target\")`")));
                }
                Ok(target)
            }
            Value::None => Err(EvalError::new(loc.clone(), "decorator is None: 'NoneType' object is not callable")
                .with_help("a DSL call with `replacement=` registers immediately and returns None; do not use it as a decorator")),
            Value::Unknown(u) => Ok(Value::Unknown(u)),
            // Anything else (functools.lru_cache(...), dataclass, torch.no_grad(), ...)
            // wraps the object; inspect unwraps it again, so the source stays.
            _ => Ok(target),
        }
    }

    fn assign(&mut self, frame: &mut Frame, target: &Expr, value: Value) -> EResult<()> {
        match target {
            Expr::Name(n) => {
                if let Some(scope) = frame.locals.last_mut() {
                    scope.insert(n.id.to_string(), value);
                } else {
                    frame.ns.borrow_mut().insert(n.id.to_string(), value);
                }
                Ok(())
            }
            Expr::Attribute(attr) => {
                let obj = self.eval(frame, &attr.value)?;
                let obj = self.force(obj)?;
                super::objects::setattr(self, &obj, attr.attr.id.as_str(), value, &frame.loc(target))
            }
            Expr::Subscript(sub) => {
                let obj = self.eval(frame, &sub.value)?;
                let obj = self.force(obj)?;
                let key = self.eval(frame, &sub.slice)?;
                super::objects::setitem(&obj, key, value, &frame.loc(target))
            }
            Expr::Tuple(t) => self.assign_seq(frame, &t.elts, value, target),
            Expr::List(l) => self.assign_seq(frame, &l.elts, value, target),
            Expr::Starred(_) => Err(EvalError::new(frame.loc(target), "starred assignment is not supported")),
            _ => Err(EvalError::new(frame.loc(target), "cannot assign to this expression")),
        }
    }

    fn assign_seq(&mut self, frame: &mut Frame, targets: &[Expr], value: Value, node: &Expr) -> EResult<()> {
        let loc = frame.loc(node);
        if matches!(value, Value::Opaque(_) | Value::Unknown(_) | Value::Lazy(_)) {
            for t in targets {
                self.assign(frame, t, value.clone())?;
            }
            return Ok(());
        }
        let items = self.iterate(frame, &value, &loc)?;
        if items.len() != targets.len() {
            return Err(EvalError::new(
                loc,
                format!("cannot unpack {} values into {} names", items.len(), targets.len()),
            ));
        }
        for (t, v) in targets.iter().zip(items) {
            self.assign(frame, t, v)?;
        }
        Ok(())
    }

    // ----- expressions ------------------------------------------------

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
        if let Some(v) = builtin_name(name) {
            return Ok(v);
        }
        let star = frame.ns.borrow().keys().find(|k| k.starts_with('*')).cloned();
        if let Some(star) = star {
            return Ok(Value::Opaque(Rc::new(Opaque { what: format!("`{name}` (maybe from {})", &star[1..]), loc })));
        }
        Err(EvalError::new(loc, format!("name `{name}` is not defined"))
            .with_help("define or import it above this line"))
    }

    pub(super) fn eval(&mut self, frame: &mut Frame, expr: &Expr) -> EResult<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(EvalError::new(frame.loc(expr), "expression nested too deeply to evaluate")
                .with_help("simplify the expression"));
        }
        let r = self.eval_inner(frame, expr);
        self.depth -= 1;
        r
    }

    fn eval_inner(&mut self, frame: &mut Frame, expr: &Expr) -> EResult<Value> {
        let file = frame.file.clone();
        let loc = || file.loc(expr.start());
        Ok(match expr {
            Expr::StringLiteral(s) => Value::str(s.value.to_str()),
            Expr::BytesLiteral(_) => opaque("bytes literal", loc()),
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Value::Int(v),
                    None => opaque("large integer", loc()),
                },
                ast::Number::Float(f) => Value::Float(*f),
                ast::Number::Complex { .. } => opaque("complex number", loc()),
            },
            Expr::BooleanLiteral(b) => Value::Bool(b.value),
            Expr::NoneLiteral(_) => Value::None,
            Expr::EllipsisLiteral(_) => opaque("Ellipsis", loc()),
            Expr::FString(f) => self.eval_fstring(frame, f)?,
            Expr::Name(n) => {
                let l = loc();
                self.lookup(frame, n.id.as_str(), l)?
            }
            Expr::Attribute(a) => {
                let base = self.eval(frame, &a.value)?;
                let l = loc();
                super::objects::getattr(self, base, a.attr.id.as_str(), &l)?
            }
            Expr::Call(call) => {
                let func = self.eval(frame, &call.func)?;
                let mut args = Vec::new();
                for arg in call.arguments.args.iter() {
                    if let Expr::Starred(s) = arg {
                        let v = self.eval(frame, &s.value)?;
                        let l = frame.loc(arg);
                        args.extend(self.iterate(frame, &v, &l)?);
                    } else {
                        args.push(self.eval(frame, arg)?);
                    }
                }
                let mut kwargs = Vec::new();
                for kw in call.arguments.keywords.iter() {
                    let v = self.eval(frame, &kw.value)?;
                    match &kw.arg {
                        Some(name) => kwargs.push((name.id.to_string(), v)),
                        None => {
                            let v = self.force(v)?;
                            match v {
                                Value::Dict(d) => {
                                    for (k, v) in d.borrow().iter() {
                                        match k {
                                            Value::Str(s) => kwargs.push((s.to_string(), v.clone())),
                                            _ => return Err(EvalError::new(frame.loc(kw), "keywords must be strings")),
                                        }
                                    }
                                }
                                other => {
                                    return Err(EvalError::new(
                                        frame.loc(kw),
                                        format!("cannot expand `**{}` statically", other.type_name()),
                                    ));
                                }
                            }
                        }
                    }
                }
                let l = loc();
                self.call(frame, func, args, kwargs, &l)?
            }
            Expr::List(l) => Value::list(self.eval_elts(frame, &l.elts)?),
            Expr::Tuple(t) => Value::Tuple(Rc::new(self.eval_elts(frame, &t.elts)?)),
            Expr::Set(s) => {
                let items = self.eval_elts(frame, &s.elts)?;
                let set = Value::Set(shared(Vec::new()));
                let l = loc();
                self.call_method(frame, set.clone(), "update", vec![Value::list(items)], vec![], &l)?;
                set
            }
            Expr::Dict(d) => {
                let dict = shared(Vec::new());
                for item in &d.items {
                    match &item.key {
                        Some(k) => {
                            let k = self.eval(frame, k)?;
                            let v = self.eval(frame, &item.value)?;
                            super::objects::dict_set(&dict, k, v, &frame.loc(&item.value))?;
                        }
                        None => {
                            let v = self.eval(frame, &item.value)?;
                            let v = self.force(v)?;
                            match v {
                                Value::Dict(other) => {
                                    let items = other.borrow().clone();
                                    for (k, v) in items {
                                        super::objects::dict_set(&dict, k, v, &frame.loc(&item.value))?;
                                    }
                                }
                                _ => return Ok(opaque("dict with `**` of an unknown value", loc())),
                            }
                        }
                    }
                }
                Value::Dict(dict)
            }
            Expr::BinOp(b) => {
                let l = self.eval(frame, &b.left)?;
                let r = self.eval(frame, &b.right)?;
                let lc = loc();
                self.binop(&l, b.op, &r, &lc)?
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(frame, &u.operand)?;
                let v = self.force(v)?;
                match (u.op, &v) {
                    (ast::UnaryOp::Not, _) => match v.truthy() {
                        Some(t) => Value::Bool(!t),
                        None => opaque("`not` of an unknown value", loc()),
                    },
                    (ast::UnaryOp::USub, Value::Int(i)) => Value::Int(-i),
                    (ast::UnaryOp::USub, Value::Float(f)) => Value::Float(-f),
                    (ast::UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => v.clone(),
                    _ => opaque("unary operation", loc()),
                }
            }
            Expr::BoolOp(b) => {
                let mut last = Value::None;
                for (i, e) in b.values.iter().enumerate() {
                    let v = self.eval(frame, e)?;
                    let v = self.force(v)?;
                    let is_last = i + 1 == b.values.len();
                    match v.truthy() {
                        None if !is_last => return Ok(opaque("`and`/`or` over an unknown value", loc())),
                        Some(t) if !is_last => {
                            let stop = match b.op {
                                ast::BoolOp::And => !t,
                                ast::BoolOp::Or => t,
                            };
                            if stop {
                                return Ok(v);
                            }
                        }
                        _ => {}
                    }
                    last = v;
                }
                last
            }
            Expr::Compare(c) => {
                let mut left = self.eval(frame, &c.left)?;
                left = self.force(left)?;
                let mut result = Value::Bool(true);
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.eval(frame, right)?;
                    let r = self.force(r)?;
                    let lc = loc();
                    match super::objects::compare(self, frame, &left, *op, &r, &lc)? {
                        Some(true) => {}
                        Some(false) => {
                            result = Value::Bool(false);
                            break;
                        }
                        None => return Ok(opaque("comparison with an unknown value", loc())),
                    }
                    left = r;
                }
                result
            }
            Expr::If(i) => {
                let t = self.eval(frame, &i.test)?;
                let t = self.force(t)?;
                match t.truthy() {
                    Some(true) => self.eval(frame, &i.body)?,
                    Some(false) => self.eval(frame, &i.orelse)?,
                    None => opaque("conditional expression over an unknown value", loc()),
                }
            }
            Expr::ListComp(c) => Value::list(self.comprehension(frame, &c.generators, &|ev, fr| ev.eval(fr, &c.elt))?),
            Expr::Generator(c) => Value::list(self.comprehension(frame, &c.generators, &|ev, fr| ev.eval(fr, &c.elt))?),
            Expr::SetComp(c) => {
                let items = self.comprehension(frame, &c.generators, &|ev, fr| ev.eval(fr, &c.elt))?;
                let set = Value::Set(shared(Vec::new()));
                let l = loc();
                self.call_method(frame, set.clone(), "update", vec![Value::list(items)], vec![], &l)?;
                set
            }
            Expr::DictComp(c) => {
                let pairs = self.comprehension(frame, &c.generators, &|ev, fr| {
                    let Some(key) = &c.key else {
                        return Err(EvalError::new(fr.loc(&*c.value), "`**` in a dict comprehension is not supported"));
                    };
                    let k = ev.eval(fr, key)?;
                    let v = ev.eval(fr, &c.value)?;
                    Ok(Value::Tuple(Rc::new(vec![k, v])))
                })?;
                let dict = shared(Vec::new());
                for p in pairs {
                    if let Value::Tuple(t) = p {
                        super::objects::dict_set(&dict, t[0].clone(), t[1].clone(), &loc())?;
                    }
                }
                Value::Dict(dict)
            }
            Expr::Subscript(s) => {
                let base = self.eval(frame, &s.value)?;
                let base = self.force(base)?;
                if let Expr::Slice(slice) = &*s.slice {
                    let bound = |e: &Option<Box<Expr>>, ev: &mut Self, fr: &mut Frame| -> EResult<Option<i64>> {
                        match e {
                            None => Ok(None),
                            Some(e) => match ev.eval(fr, e)? {
                                Value::Int(i) => Ok(Some(i)),
                                Value::None => Ok(None),
                                _ => Err(EvalError::new(fr.loc(&**e), "slice bounds must be integers")),
                            },
                        }
                    };
                    if slice.step.is_some() {
                        return Ok(opaque("slice with a step", loc()));
                    }
                    let lo = bound(&slice.lower, self, frame)?;
                    let hi = bound(&slice.upper, self, frame)?;
                    super::objects::slice(&base, lo, hi, &loc())?
                } else {
                    let key = self.eval(frame, &s.slice)?;
                    let key = self.force(key)?;
                    super::objects::getitem(&base, &key, &loc())?
                }
            }
            Expr::Lambda(_) => opaque("lambda", loc()),
            Expr::Named(_) | Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) => {
                return Err(EvalError::new(loc(), "expression not allowed in a patch config at module level"));
            }
            Expr::Starred(_) => return Err(EvalError::new(loc(), "starred expression not allowed here")),
            Expr::TString(_) | Expr::Slice(_) | Expr::IpyEscapeCommand(_) => opaque("expression", loc()),
        })
    }

    fn eval_elts(&mut self, frame: &mut Frame, elts: &[Expr]) -> EResult<Vec<Value>> {
        let mut out = Vec::with_capacity(elts.len());
        for e in elts {
            if let Expr::Starred(s) = e {
                let v = self.eval(frame, &s.value)?;
                let l = frame.loc(e);
                out.extend(self.iterate(frame, &v, &l)?);
            } else {
                out.push(self.eval(frame, e)?);
            }
        }
        Ok(out)
    }

    fn eval_fstring(&mut self, frame: &mut Frame, f: &ast::ExprFString) -> EResult<Value> {
        let mut out = String::new();
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(lit) => out.push_str(&lit.value),
                ast::FStringPart::FString(fs) => {
                    for element in fs.elements.iter() {
                        match element {
                            ast::InterpolatedStringElement::Literal(lit) => out.push_str(&lit.value),
                            ast::InterpolatedStringElement::Interpolation(interp) => {
                                let v = self.eval(frame, &interp.expression)?;
                                let v = self.force(v)?;
                                let known = interp.format_spec.is_none()
                                    && interp.debug_text.is_none()
                                    && matches!(
                                        interp.conversion,
                                        ast::ConversionFlag::None | ast::ConversionFlag::Str
                                    );
                                match (&v, known) {
                                    (Value::Str(s), true) => out.push_str(s),
                                    (Value::Int(i), true) => out.push_str(&i.to_string()),
                                    _ => {
                                        return Ok(opaque(
                                            &format!("f-string over {}", v.type_name()),
                                            frame.loc(&*interp.expression),
                                        ));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(Value::str(&out))
    }

    /// Run a comprehension: `for` clauses bind in a scope of their own.
    fn comprehension(
        &mut self,
        frame: &mut Frame,
        generators: &[ast::Comprehension],
        elt: &dyn Fn(&mut Self, &mut Frame) -> EResult<Value>,
    ) -> EResult<Vec<Value>> {
        let mut out = Vec::new();
        frame.locals.push(HashMap::new());
        let r = self.comprehension_level(frame, generators, elt, &mut out);
        frame.locals.pop();
        r.map(|_| out)
    }

    fn comprehension_level(
        &mut self,
        frame: &mut Frame,
        generators: &[ast::Comprehension],
        elt: &dyn Fn(&mut Self, &mut Frame) -> EResult<Value>,
        out: &mut Vec<Value>,
    ) -> EResult<()> {
        let Some((first, rest)) = generators.split_first() else {
            out.push(elt(self, frame)?);
            return Ok(());
        };
        let iterable = self.eval(frame, &first.iter)?;
        let l = frame.loc(&first.iter);
        let items = self.iterate(frame, &iterable, &l)?;
        'items: for item in items {
            self.assign(frame, &first.target, item)?;
            for cond in &first.ifs {
                let c = self.eval(frame, cond)?;
                let c = self.force(c)?;
                match c.truthy() {
                    Some(true) => {}
                    Some(false) => continue 'items,
                    None => {
                        return Err(EvalError::new(
                            frame.loc(cond),
                            format!("cannot decide this filter statically (it is {})", c.type_name()),
                        ));
                    }
                }
            }
            self.comprehension_level(frame, rest, elt, out)?;
        }
        Ok(())
    }

    pub(super) fn iterate(&mut self, _frame: &mut Frame, value: &Value, loc: &Loc) -> EResult<Vec<Value>> {
        let value = self.force(value.clone())?;
        Ok(match &value {
            Value::List(l) => l.borrow().clone(),
            Value::Set(s) => s.borrow().clone(),
            Value::Tuple(t) => t.to_vec(),
            Value::Dict(d) => d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            Value::Str(s) => s.chars().map(|c| Value::str(&c.to_string())).collect(),
            other => {
                return Err(EvalError::new(
                    loc.clone(),
                    format!("cannot iterate over {} statically", other.type_name()),
                )
                .with_help(describe_origin(other)));
            }
        })
    }

    fn binop(&mut self, l: &Value, op: ast::Operator, r: &Value, loc: &Loc) -> EResult<Value> {
        let l = self.force(l.clone())?;
        let r = self.force(r.clone())?;
        // Refuse before building anything huge (`s * 99999`, `a += a` repeated).
        let grown = match (op, &r) {
            (ast::Operator::Mult, Value::Int(n)) => (value_size(&l) as u128) * ((*n).max(0) as u128),
            (ast::Operator::Add, _) => (value_size(&l) + value_size(&r)) as u128,
            _ => 0,
        };
        if grown > MAX_VALUE_SIZE as u128 {
            return Err(too_large(loc));
        }
        Ok(match (op, &l, &r) {
            (ast::Operator::Add, Value::Str(a), Value::Str(b)) => Value::str(&format!("{a}{b}")),
            (ast::Operator::Add, Value::List(a), Value::List(b)) => {
                let mut v = a.borrow().clone();
                v.extend(b.borrow().iter().cloned());
                Value::list(v)
            }
            (ast::Operator::Add, Value::Tuple(a), Value::Tuple(b)) => {
                Value::Tuple(Rc::new(a.iter().chain(b.iter()).cloned().collect()))
            }
            (ast::Operator::Add, Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_add(*b)),
            (ast::Operator::Sub, Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_sub(*b)),
            (ast::Operator::Mult, Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_mul(*b)),
            (ast::Operator::Mult, Value::Str(a), Value::Int(n)) => Value::str(&a.repeat((*n).max(0) as usize)),
            (ast::Operator::BitOr, Value::Dict(a), Value::Dict(b)) => {
                let out = shared(a.borrow().clone());
                for (k, v) in b.borrow().iter() {
                    super::objects::dict_set(&out, k.clone(), v.clone(), loc)?;
                }
                Value::Dict(out)
            }
            _ => opaque(&format!("`{}` {} `{}`", l.type_name(), op.as_str(), r.type_name()), loc.clone()),
        })
    }

    pub(super) fn call(
        &mut self,
        frame: &mut Frame,
        func: Value,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        loc: &Loc,
    ) -> EResult<Value> {
        match func {
            Value::Builtin(b) => super::dsl::call_builtin(self, frame, b, args, kwargs, loc),
            Value::Method(recv, name) => self.call_method(frame, *recv, &name, args, kwargs, loc),
            Value::Decorator(pending) => {
                if args.len() != 1 || !kwargs.is_empty() {
                    return Err(EvalError::new(loc.clone(), "a patch decorator takes exactly one function or class"));
                }
                let target = args.into_iter().next().expect("one arg");
                super::dsl::register_decorated(self, &pending, target.clone(), loc)?;
                Ok(target)
            }
            Value::Unknown(u) => Ok(Value::Unknown(u)),
            Value::None => Err(EvalError::new(loc.clone(), "'NoneType' object is not callable")),
            other => {
                // Calls into code patchgen does not run. Refuse when the
                // callee could modify a config behind our back.
                for a in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
                    if matches!(a, Value::Config(_) | Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Patch(_))
                    {
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

    pub(super) fn call_method(
        &mut self,
        frame: &mut Frame,
        recv: Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        loc: &Loc,
    ) -> EResult<Value> {
        match &recv {
            Value::Config(c) => super::dsl::call_config_method(self, frame, c.clone(), name, args, kwargs, loc),
            _ => super::objects::call_method(self, frame, recv, name, args, kwargs, loc),
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

fn too_large(loc: &Loc) -> EvalError {
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
