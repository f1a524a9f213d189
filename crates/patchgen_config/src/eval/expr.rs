//! Expressions: literals, names, attribute and item access, calls,
//! collection displays and comprehensions, operators, f-strings.

use std::collections::HashMap;
use std::rc::Rc;

use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

use super::{EResult, EvalError, Evaluator, Frame, MAX_DEPTH, describe_origin, opaque, too_large, value_size};
use crate::args::Args;
use crate::plan::Loc;
use crate::source::LocOf;
use crate::value::*;

impl Evaluator<'_> {
    pub(crate) fn eval(&mut self, frame: &mut Frame, expr: &Expr) -> EResult<Value> {
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
        let loc = || file.loc(expr.range());
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
                crate::objects::getattr(self, base, a.attr.id.as_str(), &l)?
            }
            Expr::Call(call) => self.eval_call(frame, expr, call)?,
            Expr::List(l) => Value::list(self.eval_elts(frame, &l.elts)?),
            Expr::Tuple(t) => Value::Tuple(Rc::new(self.eval_elts(frame, &t.elts)?)),
            Expr::Set(s) => self.eval_set(frame, expr, s)?,
            Expr::Dict(d) => self.eval_dict(frame, expr, d)?,
            Expr::BinOp(b) => {
                let l = self.eval(frame, &b.left)?;
                let r = self.eval(frame, &b.right)?;
                let lc = loc();
                self.binop(&l, b.op, &r, &lc)?
            }
            Expr::UnaryOp(u) => self.eval_unary(frame, expr, u)?,
            Expr::BoolOp(b) => self.eval_bool_op(frame, expr, b)?,
            Expr::Compare(c) => self.eval_compare(frame, expr, c)?,
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
                self.call_method(frame, set.clone(), "update", Args::positional(vec![Value::list(items)]), &l)?;
                set
            }
            Expr::DictComp(c) => self.eval_dict_comp(frame, expr, c)?,
            Expr::Subscript(s) => self.eval_subscript(frame, expr, s)?,
            Expr::Lambda(_) => opaque("lambda", loc()),
            Expr::Named(_) | Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) => {
                return Err(EvalError::new(loc(), "expression not allowed in a patch config at module level"));
            }
            Expr::Starred(_) => return Err(EvalError::new(loc(), "starred expression not allowed here")),
            Expr::TString(_) | Expr::Slice(_) | Expr::IpyEscapeCommand(_) => opaque("expression", loc()),
        })
    }

    /// A call: arguments (`*` and `**` expanded) evaluated left to right, then the callee called.
    fn eval_call(&mut self, frame: &mut Frame, expr: &Expr, call: &ast::ExprCall) -> EResult<Value> {
        Ok({
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
            let l = frame.loc(expr);
            self.call(frame, func, Args { positional: args, keywords: kwargs }, &l).map_err(|mut e| {
                // An error about one keyword of this very call points at it.
                if let Some(name) = e.keyword.take()
                    && e.loc == l
                    && let Some(kw) =
                        call.arguments.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == &*name))
                {
                    e.loc = frame.loc(kw);
                }
                e
            })?
        })
    }

    /// A set display.
    fn eval_set(&mut self, frame: &mut Frame, expr: &Expr, s: &ast::ExprSet) -> EResult<Value> {
        Ok({
            let items = self.eval_elts(frame, &s.elts)?;
            let set = Value::Set(shared(Vec::new()));
            let l = frame.loc(expr);
            self.call_method(frame, set.clone(), "update", Args::positional(vec![Value::list(items)]), &l)?;
            set
        })
    }

    /// A dict display (`**` of a known dict merged in).
    fn eval_dict(&mut self, frame: &mut Frame, expr: &Expr, d: &ast::ExprDict) -> EResult<Value> {
        Ok({
            let dict = shared(Vec::new());
            for item in &d.items {
                match &item.key {
                    Some(k) => {
                        let k = self.eval(frame, k)?;
                        let v = self.eval(frame, &item.value)?;
                        crate::objects::dict_set(&dict, k, v, &frame.loc(&item.value))?;
                    }
                    None => {
                        let v = self.eval(frame, &item.value)?;
                        let v = self.force(v)?;
                        match v {
                            Value::Dict(other) => {
                                let items = other.borrow().clone();
                                for (k, v) in items {
                                    crate::objects::dict_set(&dict, k, v, &frame.loc(&item.value))?;
                                }
                            }
                            _ => return Ok(opaque("dict with `**` of an unknown value", frame.loc(expr))),
                        }
                    }
                }
            }
            Value::Dict(dict)
        })
    }

    /// `not`, unary `-` and `+`.
    fn eval_unary(&mut self, frame: &mut Frame, expr: &Expr, u: &ast::ExprUnaryOp) -> EResult<Value> {
        Ok({
            let v = self.eval(frame, &u.operand)?;
            let v = self.force(v)?;
            match (u.op, &v) {
                (ast::UnaryOp::Not, _) => match v.truthy() {
                    Some(t) => Value::Bool(!t),
                    None => opaque("`not` of an unknown value", frame.loc(expr)),
                },
                (ast::UnaryOp::USub, Value::Int(i)) => Value::Int(-i),
                (ast::UnaryOp::USub, Value::Float(f)) => Value::Float(-f),
                (ast::UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => v.clone(),
                _ => opaque("unary operation", frame.loc(expr)),
            }
        })
    }

    /// `and` / `or`, short-circuiting as Python does.
    fn eval_bool_op(&mut self, frame: &mut Frame, expr: &Expr, b: &ast::ExprBoolOp) -> EResult<Value> {
        Ok({
            let mut last = Value::None;
            for (i, e) in b.values.iter().enumerate() {
                let v = self.eval(frame, e)?;
                let v = self.force(v)?;
                let is_last = i + 1 == b.values.len();
                match v.truthy() {
                    None if !is_last => return Ok(opaque("`and`/`or` over an unknown value", frame.loc(expr))),
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
        })
    }

    /// A comparison chain.
    fn eval_compare(&mut self, frame: &mut Frame, expr: &Expr, c: &ast::ExprCompare) -> EResult<Value> {
        Ok({
            let mut left = self.eval(frame, &c.left)?;
            left = self.force(left)?;
            let mut result = Value::Bool(true);
            for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                let r = self.eval(frame, right)?;
                let r = self.force(r)?;
                let lc = frame.loc(expr);
                match crate::objects::compare(self, frame, &left, *op, &r, &lc)? {
                    Some(true) => {}
                    Some(false) => {
                        result = Value::Bool(false);
                        break;
                    }
                    None => return Ok(opaque("comparison with an unknown value", frame.loc(expr))),
                }
                left = r;
            }
            result
        })
    }

    /// A dict comprehension.
    fn eval_dict_comp(&mut self, frame: &mut Frame, expr: &Expr, c: &ast::ExprDictComp) -> EResult<Value> {
        Ok({
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
                    crate::objects::dict_set(&dict, t[0].clone(), t[1].clone(), &frame.loc(expr))?;
                }
            }
            Value::Dict(dict)
        })
    }

    /// `x[i]` and `x[a:b]`.
    fn eval_subscript(&mut self, frame: &mut Frame, expr: &Expr, s: &ast::ExprSubscript) -> EResult<Value> {
        Ok({
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
                    return Ok(opaque("slice with a step", frame.loc(expr)));
                }
                let lo = bound(&slice.lower, self, frame)?;
                let hi = bound(&slice.upper, self, frame)?;
                crate::objects::slice(&base, lo, hi, &frame.loc(expr))?
            } else {
                let key = self.eval(frame, &s.slice)?;
                let key = self.force(key)?;
                crate::objects::getitem(&base, &key, &frame.loc(expr))?
            }
        })
    }

    pub(super) fn eval_elts(&mut self, frame: &mut Frame, elts: &[Expr]) -> EResult<Vec<Value>> {
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

    pub(super) fn eval_fstring(&mut self, frame: &mut Frame, f: &ast::ExprFString) -> EResult<Value> {
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
                                if out.len() + value_size(&v) > MAX_VALUE_SIZE {
                                    return Err(too_large(&frame.loc(&*interp.expression)));
                                }
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
    pub(super) fn comprehension(
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

    pub(super) fn comprehension_level(
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

    pub(crate) fn iterate(&mut self, _frame: &mut Frame, value: &Value, loc: &Loc) -> EResult<Vec<Value>> {
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

    pub(super) fn binop(&mut self, l: &Value, op: ast::Operator, r: &Value, loc: &Loc) -> EResult<Value> {
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
                    crate::objects::dict_set(&out, k.clone(), v.clone(), loc)?;
                }
                Value::Dict(out)
            }
            _ => opaque(&format!("`{}` {} `{}`", l.type_name(), op.as_str(), r.type_name()), loc.clone()),
        })
    }
}
