//! Statements: imports (lazy, config modules eagerly), assignments,
//! `def`/`class` with their decorators, `if` over values known statically;
//! anything else is accepted only when it cannot touch the config.

use std::rc::Rc;

use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

use super::{EResult, EvalError, Evaluator, Frame, dotted, is_config_module, is_dsl_module, too_large};
use crate::args::Args;
use crate::plan::Loc;
use crate::source::DefObj;
use crate::value::*;
use patchgen_python::pysource::keyword_line;
use patchgen_python::semantic::facts::{self, Loads};

impl Evaluator<'_> {
    pub(crate) fn exec_body(&mut self, frame: &mut Frame, body: &[Stmt]) -> EResult<()> {
        for stmt in body {
            self.exec_stmt(frame, stmt)?;
        }
        Ok(())
    }

    pub(super) fn exec_stmt(&mut self, frame: &mut Frame, stmt: &Stmt) -> EResult<()> {
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
                        self.call_method(
                            frame,
                            current.clone(),
                            "update",
                            Args::positional(vec![Value::list(items)]),
                            &loc,
                        )?;
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
    pub(super) fn unsupported(&mut self, frame: &mut Frame, stmt: &Stmt, what: &str) -> EResult<()> {
        let used = facts::loaded_names(std::slice::from_ref(stmt), Loads::WhenRun);
        for name in &used {
            let value = self.lookup_quiet(frame, name);
            if let Some(v) = value
                && v.can_reach_config()
            {
                return Err(EvalError::new(
                    frame.loc(stmt),
                    format!("patchgen cannot evaluate {what} statically, and it uses `{name}` ({})", v.type_name()),
                )
                .with_help("configs are read, never executed: keep DSL calls at module level, outside loops, `try` and conditions that depend on run-time values"));
            }
        }
        let loc = frame.loc(stmt);
        for name in patchgen_python::pysource::names::bound_names(stmt) {
            frame.ns.borrow_mut().insert(
                name.to_string(),
                Value::Unknown(Rc::new(Opaque {
                    what: format!("`{name}`, bound by {what} that patchgen does not evaluate"),
                    loc: loc.clone(),
                })),
            );
        }
        Ok(())
    }

    pub(super) fn exec_import_from(&mut self, frame: &mut Frame, imp: &ast::StmtImportFrom) -> EResult<()> {
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

    pub(super) fn star_import(&mut self, frame: &mut Frame, module: &str, loc: &Loc) -> EResult<()> {
        if is_dsl_module(module) {
            for name in
                ["PatchConfig", "Patch", "ImportSpec", "PositionedHelper", "PatchType", "create_patch_from_external"]
            {
                frame.ns.borrow_mut().insert(name.into(), crate::builtins::dsl_name(name).expect("known"));
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
    pub(super) fn module_attr(&self, module: &str, name: &str, loc: &Loc) -> Value {
        if is_dsl_module(module) {
            return crate::builtins::dsl_name(name).unwrap_or_else(|| {
                Value::Opaque(Rc::new(Opaque { what: format!("{module}.{name}"), loc: loc.clone() }))
            });
        }
        if let Some(v) = crate::builtins::stdlib_name(module, name) {
            return v;
        }
        Value::Lazy(Rc::new(LazyRef { module: module.to_string(), attr: name.to_string(), loc: loc.clone() }))
    }

    pub(super) fn exec_def(
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
            loc: Loc::line(frame.file.path.clone(), def_line),
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
    pub(super) fn check_class_body(&mut self, frame: &mut Frame, body: &[Stmt]) -> EResult<()> {
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

    pub(super) fn apply_decorator(
        &mut self,
        frame: &mut Frame,
        deco: Value,
        target: Value,
        loc: &Loc,
    ) -> EResult<Value> {
        match deco {
            Value::Decorator(pending) => {
                crate::dsl::register_decorated(self, &pending, target.clone(), loc)?;
                Ok(target)
            }
            Value::Method(recv, name) => {
                if let Value::Config(_) = *recv {
                    if &*name == "add_helper" {
                        self.call_method(frame, *recv, &name, Args::positional(vec![target.clone()]), loc)?;
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

    pub(super) fn assign(&mut self, frame: &mut Frame, target: &Expr, value: Value) -> EResult<()> {
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
                crate::objects::setattr(self, &obj, attr.attr.id.as_str(), value, &frame.loc(target))
            }
            Expr::Subscript(sub) => {
                let obj = self.eval(frame, &sub.value)?;
                let obj = self.force(obj)?;
                let key = self.eval(frame, &sub.slice)?;
                crate::objects::setitem(&obj, key, value, &frame.loc(target))
            }
            Expr::Tuple(t) => self.assign_seq(frame, &t.elts, value, target),
            Expr::List(l) => self.assign_seq(frame, &l.elts, value, target),
            Expr::Starred(_) => Err(EvalError::new(frame.loc(target), "starred assignment is not supported")),
            _ => Err(EvalError::new(frame.loc(target), "cannot assign to this expression")),
        }
    }

    pub(super) fn assign_seq(&mut self, frame: &mut Frame, targets: &[Expr], value: Value, node: &Expr) -> EResult<()> {
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
}
