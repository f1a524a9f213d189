//! PG301's data flow: which values derive from `logits_to_keep` (the keep
//! names), which locals hold hidden states that a keep slice subscripts,
//! and, statement by statement, whether each may still be unsliced when a
//! loss call receives it.

use rustc_hash::FxHashMap;

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

/// `param` and the locals computed from it (assigned from an expression
/// that mentions a keep name other than as a subscript's index).
pub(super) fn keep_names(func: &StmtFunctionDef, param: &str) -> Vec<String> {
    let mut keep = vec![param.to_string()];
    loop {
        let before = keep.len();
        walk::for_each_statement(&func.body, Scope::Own, |stmt| {
            let Some((targets, value)) = facts::assignment(stmt) else { return };
            if !mentions_outside_index(value, &|n| keep.iter().any(|k| k == n)) {
                return;
            }
            for t in targets {
                for name in target_names(t) {
                    if !keep.iter().any(|k| k == name) {
                        keep.push(name.to_string());
                    }
                }
            }
        });
        if keep.len() == before {
            return keep;
        }
    }
}

/// Names bound by an assignment target (`a`, `a, b`, `(a, *b)`).
fn target_names(target: &Expr) -> Vec<&str> {
    match target {
        Expr::Name(n) => vec![n.id.as_str()],
        Expr::Tuple(t) => t.elts.iter().flat_map(target_names).collect(),
        Expr::List(l) => l.elts.iter().flat_map(target_names).collect(),
        Expr::Starred(s) => target_names(&s.value),
        _ => Vec::new(),
    }
}

/// Whether `expr` mentions a wanted name anywhere except inside the index
/// of a subscript (`h[:, keep]` uses `keep` to slice `h`, it does not
/// compute a new keep value).
fn mentions_outside_index(expr: &Expr, wanted: &dyn Fn(&str) -> bool) -> bool {
    match expr {
        Expr::Subscript(s) => mentions_outside_index(&s.value, wanted),
        Expr::Name(n) => wanted(n.id.as_str()),
        Expr::Attribute(_) if facts::dotted(expr).is_some_and(|d| wanted(&d)) => true,
        _ => {
            let mut found = false;
            for_each_child(expr, &mut |child| found = found || mentions_outside_index(child, wanted));
            found
        }
    }
}

/// Calls `f` on each direct sub-expression of `expr` (lambdas skipped).
fn for_each_child<'a>(expr: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Children<'f, 'a>(&'f mut dyn FnMut(&'a Expr));
    impl<'a> Visitor<'a> for Children<'_, 'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            (self.0)(expr);
        }
    }
    if matches!(expr, Expr::Lambda(_)) {
        return;
    }
    visitor::walk_expr(&mut Children(f), expr);
}

/// The first loss call of `func` that receives data not (yet) sliced with
/// a keep value: `(callee, argument, first slice in the function)`.
pub(super) fn first_unsliced_loss(
    func: &StmtFunctionDef,
    keep: &[String],
) -> Option<(TextRange, TextRange, Option<TextRange>)> {
    let mut flow = Flow { keep, bases: Vec::new(), first_slice: None, found: None };
    flow.collect_bases(&func.body);
    if flow.bases.is_empty() {
        return None;
    }
    let mut state: State = flow.bases.iter().map(|b| (b.clone(), Taint::Unsliced)).collect();
    flow.block(&func.body, &mut state);
    flow.found.map(|(call, argument)| (call, argument, flow.first_slice))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taint {
    Sliced,
    Unsliced,
}

/// Tracked values (names and dotted names) and whether they may be unsliced.
type State = FxHashMap<String, Taint>;

struct Flow<'k> {
    keep: &'k [String],
    /// What some slice subscripts: the hidden states, however named.
    bases: Vec<String>,
    first_slice: Option<TextRange>,
    /// The first loss call found receiving unsliced data: (callee, argument).
    found: Option<(TextRange, TextRange)>,
}

impl Flow<'_> {
    fn is_keep(&self, name: &str) -> bool {
        self.keep.iter().any(|k| k == name)
    }

    /// Whether `expr` is a subscript whose index mentions a keep value.
    fn is_slice(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Subscript(s) if walk::mentions(&s.slice, &|n| self.is_keep(n)))
    }

    fn collect_bases(&mut self, body: &[Stmt]) {
        for expr in walk::expressions(body, Scope::Own) {
            if let Expr::Subscript(s) = expr
                && self.is_slice(expr)
            {
                if self.first_slice.is_none_or(|r| s.range().start() < r.start()) {
                    self.first_slice = Some(s.range());
                }
                if let Some(base) = facts::dotted(&s.value)
                    && !self.is_keep(&base)
                    && !self.bases.contains(&base)
                {
                    self.bases.push(base);
                }
            }
        }
    }

    /// The taint of a value: unsliced when it uses unsliced data outside a
    /// slice, sliced when it uses a slice or sliced data, else untracked.
    fn taint(&self, expr: &Expr, state: &State) -> Option<Taint> {
        let mut sliced = false;
        let unsliced = self.uses(expr, state, &mut sliced);
        if unsliced {
            Some(Taint::Unsliced)
        } else if sliced {
            Some(Taint::Sliced)
        } else {
            None
        }
    }

    /// Whether `expr` uses unsliced data outside a slice; sets `sliced` when
    /// it uses a slice or sliced data.
    fn uses(&self, expr: &Expr, state: &State, sliced: &mut bool) -> bool {
        if self.is_slice(expr) {
            *sliced = true;
            return false;
        }
        let name = match expr {
            Expr::Name(n) => Some(n.id.to_string()),
            Expr::Attribute(_) => facts::dotted(expr),
            _ => None,
        };
        if let Some(name) = name {
            match state.get(&name) {
                Some(Taint::Unsliced) => return true,
                Some(Taint::Sliced) => {
                    *sliced = true;
                    return false;
                }
                None => {}
            }
        }
        let mut unsliced = false;
        for_each_child(expr, &mut |child| unsliced = self.uses(child, state, sliced) || unsliced);
        unsliced
    }

    /// Report the first loss call in `expr` that receives unsliced data.
    fn check_calls(&mut self, expr: &Expr, state: &State) {
        if self.found.is_some() {
            return;
        }
        for call in walk::calls(expr) {
            if !is_loss_call(&call.func) {
                continue;
            }
            let args = call
                .arguments
                .args
                .iter()
                .chain(call.arguments.keywords.iter().filter(|k| k.arg.is_some()).map(|k| &k.value));
            for arg in args {
                let mut sliced = false;
                if self.uses(arg, state, &mut sliced) {
                    self.found = Some((call.func.range(), arg.range()));
                    return;
                }
            }
        }
    }

    fn assign(&mut self, targets: &[&Expr], value: &Expr, state: &mut State) {
        self.check_calls(value, state);
        let taint = self.taint(value, state);
        for t in targets {
            let names: Vec<String> = match t {
                Expr::Attribute(_) => facts::dotted(t).into_iter().collect(),
                _ => target_names(t).into_iter().map(str::to_string).collect(),
            };
            for name in names {
                match taint {
                    Some(taint) => {
                        state.insert(name, taint);
                    }
                    // A base reassigned from something fresh is the hidden
                    // states again, unsliced.
                    None if self.bases.contains(&name) => {
                        state.insert(name, Taint::Unsliced);
                    }
                    None => {
                        state.remove(&name);
                    }
                }
            }
        }
    }

    fn block(&mut self, body: &[Stmt], state: &mut State) {
        for stmt in body {
            self.stmt(stmt, state);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, state: &mut State) {
        match stmt {
            Stmt::Assign(a) => {
                let targets: Vec<&Expr> = a.targets.iter().collect();
                self.assign(&targets, &a.value, state);
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.assign(&[&a.target], v, state);
                }
            }
            Stmt::AugAssign(a) => {
                self.check_calls(&a.value, state);
                let mut sliced = false;
                if self.uses(&a.value, state, &mut sliced)
                    && let Some(name) = facts::dotted(&a.target)
                {
                    state.insert(name, Taint::Unsliced);
                }
            }
            Stmt::Expr(e) => self.check_calls(&e.value, state),
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.check_calls(v, state);
                }
            }
            Stmt::If(i) => {
                self.check_calls(&i.test, state);
                // `if logits_to_keep: h = h[:, -logits_to_keep:]` is the
                // same as slicing unconditionally (a zero keeps everything).
                let on_keep = walk::mentions(&i.test, &|n| self.is_keep(n));
                let mut arms = Vec::new();
                let mut body_state = state.clone();
                self.block(&i.body, &mut body_state);
                arms.push(body_state);
                let mut has_else = false;
                for clause in &i.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.check_calls(test, state);
                    } else {
                        has_else = true;
                    }
                    let mut s = state.clone();
                    self.block(&clause.body, &mut s);
                    arms.push(s);
                }
                if !has_else && !on_keep {
                    arms.push(state.clone());
                }
                *state = merge(arms);
            }
            Stmt::For(f) => {
                self.check_calls(&f.iter, state);
                let mut s = state.clone();
                self.block(&f.body, &mut s);
                self.block(&f.orelse, &mut s);
                *state = merge(vec![state.clone(), s]);
            }
            Stmt::While(w) => {
                self.check_calls(&w.test, state);
                let mut s = state.clone();
                self.block(&w.body, &mut s);
                self.block(&w.orelse, &mut s);
                *state = merge(vec![state.clone(), s]);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.check_calls(&item.context_expr, state);
                }
                self.block(&w.body, state);
            }
            Stmt::Try(t) => {
                let mut s = state.clone();
                self.block(&t.body, &mut s);
                let mut arms = vec![s.clone()];
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    let mut hs = merge(vec![state.clone(), s.clone()]);
                    self.block(&h.body, &mut hs);
                    arms.push(hs);
                }
                let mut merged = merge(arms);
                self.block(&t.orelse, &mut merged);
                self.block(&t.finalbody, &mut merged);
                *state = merged;
            }
            Stmt::Match(m) => {
                self.check_calls(&m.subject, state);
                let mut arms = vec![state.clone()];
                for case in &m.cases {
                    let mut s = state.clone();
                    self.block(&case.body, &mut s);
                    arms.push(s);
                }
                *state = merge(arms);
            }
            Stmt::FunctionDef(_)
            | Stmt::ClassDef(_)
            | Stmt::Delete(_)
            | Stmt::TypeAlias(_)
            | Stmt::Raise(_)
            | Stmt::Assert(_)
            | Stmt::Import(_)
            | Stmt::ImportFrom(_)
            | Stmt::Global(_)
            | Stmt::Nonlocal(_)
            | Stmt::Pass(_)
            | Stmt::Break(_)
            | Stmt::Continue(_)
            | Stmt::IpyEscapeCommand(_) => {}
        }
    }
}

/// Join of the states of several paths: unsliced on any path wins, then
/// sliced on any path (the others did not touch it), else untracked.
fn merge(arms: Vec<State>) -> State {
    let mut out = State::default();
    for arm in arms {
        for (k, v) in arm {
            match out.get(&k) {
                Some(Taint::Unsliced) => {}
                _ => {
                    out.insert(k, v);
                }
            }
        }
    }
    out
}

/// A call computing a token loss: the callee's name contains `loss`, and it
/// is not the MoE load-balancing (router auxiliary) loss.
pub(super) fn is_loss_call(func: &Expr) -> bool {
    let Some(name) = facts::last_ident(func) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    name.contains("loss") && !name.contains("balanc") && !name.contains("aux") && !name.contains("router")
}
