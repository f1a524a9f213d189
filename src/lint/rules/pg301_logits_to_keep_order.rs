//! PG301 logits-to-keep-order: a patched causal-LM `forward` that feeds the loss before slicing with `logits_to_keep`, or drops the parameter.
//!
//! ## What it does
//! Checks that a patched `*ForCausalLM.forward` or
//! `*ForConditionalGeneration.forward` applies `logits_to_keep` to the hidden
//! states *before* they reach the loss, on every path, and that it still
//! accepts `logits_to_keep` when the upstream method does.
//!
//! ## Why is this bad?
//! Upstream slices first (`logits = self.lm_head(hidden_states[:, slice_indices, :])`)
//! and computes the loss from what it kept. A fused-loss override that passes
//! the unsliced `hidden_states` to the loss and slices only in the
//! `labels is None` branch computes the loss over every position when a caller
//! asks for fewer (`logits_to_keep > 0` with labels: RL actors, evaluation
//! with a prompt mask): the loss is silently taken over the wrong positions.
//! An override that drops the parameter sends `logits_to_keep` into
//! `**kwargs`, where the decoder ignores it or fails.
//!
//! ## Example
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
//!     hidden_states = self.model(input_ids, **kwargs).last_hidden_state
//!     slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
//!     if labels is not None:
//!         loss, logits, _ = self.loss_function(logits=None, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
//!     else:
//!         logits = self.lm_head(hidden_states[:, slice_indices, :])
//! ```
//!
//! ## Use instead
//! ```python
//! @config.override_method("Qwen3ForCausalLM.forward")
//! def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
//!     hidden_states = self.model(input_ids, **kwargs).last_hidden_state
//!     slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
//!     hidden_states = hidden_states[:, slice_indices, :]
//!     if labels is not None:
//!         loss, logits, _ = self.loss_function(logits=None, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight)
//!     else:
//!         logits = self.lm_head(hidden_states)
//! ```
//!
//! ## Fix
//! The diagnostic's help spells out the edit when it is unambiguous, and
//! `fix` computes it (there is no `lint --fix`; `patchgen new` applies it
//! to a template forward it copies instead of reusing, see `docs/new.md`):
//! right after the top-level statement binding the last of what the slice
//! needs (`slice_indices = ...`, or the hidden states themselves when the
//! function slices with `logits_to_keep` directly) it inserts
//! `hidden_states = hidden_states[:, slice_indices, :]`, and each later
//! `hidden_states[:, slice_indices, :]` becomes `hidden_states` — the
//! "Use instead" above from the "Example". Same semantics as upstream
//! (slice, then logits and loss); `logits_to_keep=0` slices
//! `slice(-0, None)`, every position, so training is unchanged. Offered
//! only when the unsliced argument of the loss is a plain name bound by
//! top-level assignments before the loss, every slice of it has the same
//! index and follows those bindings, and afterwards it is used only in
//! those slices and as a direct argument of a loss or `*head*` call (not
//! returned, not inspected); the fixed function is checked again.
//!
//! ## How it decides
//! "Keep" values are the `logits_to_keep` parameter and every local computed
//! from it (`slice_indices`, whatever it is called). A subscript whose index
//! mentions a keep value is a *slice*; what it subscripts (`hidden_states`,
//! `outputs.last_hidden_state`) is *unsliced* until reassigned from a slice,
//! and values computed from unsliced data (`logits = self.lm_head(h)`) are
//! unsliced too. Walking the body in order (both arms of an `if` merged, an
//! `if` on a keep value taken as applied), every loss call (a callee whose
//! name contains `loss`, not a load-balancing one) that receives unsliced data
//! is reported, first one per function.

use rustc_hash::FxHashMap;

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

use super::super::{LintContext, Rule};
use crate::diagnostics::{Diagnostic, Severity};
use crate::lint::{patched, pyfacts};

pub const RULE: Rule = Rule {
    code: "PG301",
    name: "logits-to-keep-order",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg301_logits_to_keep_order.rs"),
    check,
    check_project: None,
};

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for stmt in ctx.generated.body() {
        let Stmt::ClassDef(class) = stmt else {
            continue;
        };
        let target = format!("{}.forward", class.name.id);
        if !is_target(&target) {
            continue;
        }
        let Some(forward) = pyfacts::method(class, "forward") else {
            continue;
        };
        // Only forwards a config wrote (an override or a replaced class).
        let def_line = ctx.generated.line_of(forward.name.start());
        let Some(origin) = ctx.origin_of_line(def_line) else {
            continue;
        };
        let fallback = origin.patch.map(|i| ctx.plan.patches[i].registered_at.clone());
        let upstream_has_param = patched::with_upstream_method(ctx, class.name.id.as_str(), "forward", |f| {
            pyfacts::param_names(&f.parameters).contains(&PARAM)
        });
        for problem in analyze(forward, upstream_has_param) {
            let d = match problem {
                Problem::MissingParameter => {
                    let d = RULE.diagnostic(format!(
                        "`{target}` drops the `{PARAM}` parameter the upstream method takes: it lands in `**kwargs` and the logits are never trimmed"
                    ))
                    .help(format!(
                        "accept `{PARAM}: int | torch.Tensor = 0` and slice the hidden states with it before the lm_head and the loss"
                    ));
                    ctx.at_generated(d, forward.name.start(), fallback.as_ref())
                }
                Problem::LossBeforeSlice { call, argument, slice } => {
                    let callee = &ctx.generated.text[call];
                    let arg = &ctx.generated.text[argument];
                    let help = match fix(forward, &ctx.generated.text) {
                        Some(f) => f.help(),
                        None => "slice first (`hidden_states = hidden_states[:, slice_indices, :]` before `if labels is not None:`), then compute logits and loss from the sliced tensor".to_string(),
                    };
                    let mut d = RULE
                        .diagnostic(format!(
                            "`{target}`: `{callee}(...)` receives `{arg}` before it is sliced with `{PARAM}`; with labels and `{PARAM} > 0` the loss covers every position"
                        ))
                        .help(help);
                    d = ctx.at_generated(d, call.start(), fallback.as_ref());
                    if let Some(slice) = slice {
                        let line = ctx.generated.line_of(slice.start());
                        let loc = ctx.config_location_of_line(line).unwrap_or_else(|| ctx.generated_location(line));
                        d = d.related(loc, "`logits_to_keep` is applied only here");
                    }
                    d
                }
            };
            out.push(d);
        }
    }
    out
}

/// The parameter upstream forwards take.
pub const PARAM: &str = "logits_to_keep";

/// Whether an override target is a forward this rule checks.
pub fn is_target(target: &str) -> bool {
    match target.rsplit_once('.') {
        Some((class, "forward")) => class.ends_with("ForCausalLM") || class.ends_with("ForConditionalGeneration"),
        _ => false,
    }
}

/// What is wrong with one forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Upstream takes `logits_to_keep`; the replacement does not.
    MissingParameter,
    /// A loss call receives data not (yet) sliced with `logits_to_keep`.
    LossBeforeSlice {
        /// The loss call's callee (`self.loss_function`).
        call: TextRange,
        /// The argument carrying unsliced data.
        argument: TextRange,
        /// The first slice in the function, if any (where it happens instead).
        slice: Option<TextRange>,
    },
}

/// The problems of one `forward` replacement; `upstream_has_param`: whether
/// the upstream method takes `logits_to_keep` (`None`: unknown).
pub fn analyze(func: &StmtFunctionDef, upstream_has_param: Option<bool>) -> Vec<Problem> {
    let params = pyfacts::param_names(&func.parameters);
    let Some(param) = params.iter().find(|p| **p == PARAM || p.ends_with(PARAM)) else {
        return if upstream_has_param == Some(true) { vec![Problem::MissingParameter] } else { Vec::new() };
    };
    let keep = keep_names(func, param);
    let mut flow = Flow { keep: &keep, bases: Vec::new(), first_slice: None, found: None };
    flow.collect_bases(&func.body);
    if flow.bases.is_empty() {
        return Vec::new();
    }
    let mut state: State = flow.bases.iter().map(|b| (b.clone(), Taint::Unsliced)).collect();
    flow.block(&func.body, &mut state);
    match flow.found {
        Some((call, argument)) => vec![Problem::LossBeforeSlice { call, argument, slice: flow.first_slice }],
        None => Vec::new(),
    }
}

/// `param` and the locals computed from it (assigned from an expression
/// that mentions a keep name other than as a subscript's index).
fn keep_names(func: &StmtFunctionDef, param: &str) -> Vec<String> {
    let mut keep = vec![param.to_string()];
    loop {
        let before = keep.len();
        pyfacts::walk_body(&func.body, &mut |stmt| {
            let (targets, value): (Vec<&Expr>, &Expr) = match stmt {
                Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
                Stmt::AnnAssign(a) => match &a.value {
                    Some(v) => (vec![&*a.target], v),
                    None => return,
                },
                _ => return,
            };
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
        Expr::Attribute(_) if pyfacts::dotted(expr).is_some_and(|d| wanted(&d)) => true,
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
        matches!(expr, Expr::Subscript(s) if pyfacts::mentions(&s.slice, &|n| self.is_keep(n)))
    }

    fn collect_bases(&mut self, body: &[Stmt]) {
        for expr in pyfacts::body_exprs(body) {
            if let Expr::Subscript(s) = expr
                && self.is_slice(expr)
            {
                if self.first_slice.is_none_or(|r| s.range().start() < r.start()) {
                    self.first_slice = Some(s.range());
                }
                if let Some(base) = pyfacts::dotted(&s.value)
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
            Expr::Attribute(_) => pyfacts::dotted(expr),
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
        for call in pyfacts::calls(expr) {
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
                Expr::Attribute(_) => pyfacts::dotted(t).into_iter().collect(),
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
                    && let Some(name) = pyfacts::dotted(&a.target)
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
                let on_keep = pyfacts::mentions(&i.test, &|n| self.is_keep(n));
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
fn is_loss_call(func: &Expr) -> bool {
    let Some(name) = pyfacts::last_ident(func) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    name.contains("loss") && !name.contains("balanc") && !name.contains("aux") && !name.contains("router")
}

/// A text edit: `range` of the source replaced by `content` (an empty
/// range inserts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

/// The fix of a [`Problem::LossBeforeSlice`]: slice first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    /// The unsliced variable that reaches the loss (`hidden_states`).
    pub var: String,
    /// The index of its slices, as written (`:, slice_indices, :`).
    pub index: String,
    /// The statement the slice is inserted after (its first line, trimmed).
    pub after: String,
    /// The insertion, then one replacement per later slice, in source order.
    pub edits: Vec<Edit>,
}

impl Fix {
    /// The diagnostic's help line: what the fix does.
    pub fn help(&self) -> String {
        let Fix { var, index, after, .. } = self;
        format!(
            "fix: insert `{var} = {var}[{index}]` right after `{after}` and write `{var}` for each later `{var}[{index}]` \
             (slice first, as upstream; `{PARAM}=0` keeps every position, so training is unchanged); \
             `patchgen new` applies this fix to a template forward it copies"
        )
    }
}

/// `text` with `edits` applied (ranges into `text`, not overlapping).
pub fn apply(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start(), e.range.end()));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0usize;
    for e in sorted {
        let (start, end) = (usize::from(e.range.start()), usize::from(e.range.end()));
        out.push_str(&text[at..start]);
        out.push_str(&e.content);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The fix of `func`'s loss-before-slice (`text`: the source `func` was
/// parsed from), when it is unambiguous: the unsliced argument of the first
/// loss call is a plain name `v`; every binding of `v` and of the names of
/// its slice index is a top-level statement of the body before the loss
/// statement; every slice of `v` (`v[<index>]`, the index mentioning a keep
/// value) has the same index and comes after those bindings; after them
/// `v` is used only in those slices and as a direct argument of a loss or
/// `*head*` call. The fix inserts `v = v[<index>]` after the last of those
/// bindings and writes `v` for each slice; the fixed function is checked
/// again (no loss-before-slice left). `None` otherwise.
pub fn fix(func: &StmtFunctionDef, text: &str) -> Option<Fix> {
    let params = pyfacts::param_names(&func.parameters);
    let param = *params.iter().find(|p| **p == PARAM || p.ends_with(PARAM))?;
    let Some(Problem::LossBeforeSlice { call, argument, .. }) = analyze(func, None).into_iter().next() else {
        return None;
    };
    let var = text.get(argument.start().to_usize()..argument.end().to_usize())?.to_string();
    let keep = keep_names(func, param);
    if !is_identifier(&var) || keep.contains(&var) {
        return None;
    }
    let body = &func.body;
    let position = |at: ruff_text_size::TextSize| body.iter().position(|s| s.range().contains(at));
    let loss_at = position(call.start())?;
    // The slices of `var`.
    let is_keep = |n: &str| keep.iter().any(|k| k == n);
    let slices: Vec<&ruff_python_ast::ExprSubscript> = pyfacts::all_exprs(body)
        .into_iter()
        .filter_map(|e| match e {
            Expr::Subscript(s) if matches!(&*s.value, Expr::Name(n) if n.id.as_str() == var) => Some(s),
            _ => None,
        })
        .filter(|s| pyfacts::mentions(&s.slice, &is_keep))
        .collect();
    let first = slices.first()?;
    let index = text[first.slice.range()].to_string();
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    if slices.iter().any(|s| {
        squeeze(&text[s.slice.range()]) != squeeze(&index) || !matches!(s.ctx, ruff_python_ast::ExprContext::Load)
    }) {
        return None;
    }
    // Where the slice goes: after every binding of `var` and of the index's names.
    let mut names = vec![var.clone()];
    for e in pyfacts::all_exprs_of(&first.slice) {
        if let Expr::Name(n) = e
            && !names.iter().any(|x| x == n.id.as_str())
        {
            names.push(n.id.to_string());
        }
    }
    let mut after: Option<usize> = None;
    for name in &names {
        for (i, stmt) in body.iter().enumerate() {
            if binds(stmt, name) {
                // A binding inside a block (an `if`, a loop) is not a
                // single point to slice after.
                if !matches!(stmt, Stmt::Assign(_) | Stmt::AnnAssign(_)) {
                    return None;
                }
                after = after.max(Some(i));
            }
        }
    }
    let after = after?;
    if !body.iter().take(after + 1).any(|s| binds(s, &var)) || after >= loss_at {
        return None;
    }
    // Later uses of `var`: the slices, or direct arguments of a loss or head call.
    let mut allowed: Vec<TextRange> = Vec::new();
    for (i, stmt) in body.iter().enumerate() {
        let exprs = pyfacts::all_exprs(std::slice::from_ref(stmt));
        for s in &slices {
            if stmt.range().contains_range(s.range()) {
                if i <= after {
                    return None;
                }
                allowed.push(s.value.range());
            }
        }
        if i <= after {
            continue;
        }
        for e in &exprs {
            if let Expr::Call(c) = e
                && (is_loss_call(&c.func) || pyfacts::last_ident(&c.func).is_some_and(|n| n.contains("head")))
            {
                let args = c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value));
                allowed.extend(args.filter(|a| matches!(a, Expr::Name(n) if n.id.as_str() == var)).map(Ranged::range));
            }
        }
        let stray =
            exprs.iter().any(|e| matches!(e, Expr::Name(n) if n.id.as_str() == var && !allowed.contains(&n.range())));
        if stray {
            return None;
        }
    }
    // The insertion: a line of its own after the statement, indented as the body.
    let stmt = &body[after];
    let line_end = text[stmt.end().to_usize()..].find('\n').map(|i| stmt.end().to_usize() + i + 1)?;
    if body[after + 1].start().to_usize() < line_end {
        return None;
    }
    let first_stmt = body.first()?.start().to_usize();
    let line_start = text[..first_stmt].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..first_stmt];
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    let at = ruff_text_size::TextSize::try_from(line_end).ok()?;
    let mut edits = vec![Edit { range: TextRange::empty(at), content: format!("{indent}{var} = {var}[{index}]\n") }];
    edits.extend(slices.iter().map(|s| Edit { range: s.range(), content: var.clone() }));
    let stmt_text = &text[stmt.range()];
    let fix = Fix { after: stmt_text.lines().next().unwrap_or_default().trim().to_string(), var, index, edits };
    // The fixed function must be clean.
    let fixed = apply(text, &fix.edits);
    let parsed = ruff_python_parser::parse_module(&fixed).ok()?;
    let again = function_at(&parsed.syntax().body, func.start())?;
    analyze(again, None).is_empty().then_some(fix)
}

/// The fixed text of a source holding one function definition (a
/// replacement's dedented source, decorators and comments allowed), or
/// `None` when [`fix`] offers no fix.
pub fn fixed_function_source(source: &str) -> Option<(String, Fix)> {
    let parsed = ruff_python_parser::parse_module(source).ok()?;
    let func = parsed.syntax().body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) => Some(f),
        _ => None,
    })?;
    let fix = fix(func, source)?;
    Some((apply(source, &fix.edits), fix))
}

/// The function (or method) defined at `start` in a module body.
fn function_at(body: &[Stmt], start: ruff_text_size::TextSize) -> Option<&StmtFunctionDef> {
    body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.start() == start => Some(f),
        Stmt::ClassDef(c) => function_at(&c.body, start),
        _ => None,
    })
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `stmt` (or anything nested in it) binds `name`.
fn binds(stmt: &Stmt, name: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::{ExceptHandler, Pattern};
    struct Binds<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'a> Visitor<'a> for Binds<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            let hit = match stmt {
                Stmt::FunctionDef(f) => f.name.as_str() == self.name,
                Stmt::ClassDef(c) => c.name.as_str() == self.name,
                Stmt::Import(i) => i.names.iter().any(|a| {
                    a.asname
                        .as_ref()
                        .map_or(a.name.as_str().split('.').next() == Some(self.name), |n| n.as_str() == self.name)
                }),
                Stmt::ImportFrom(i) => {
                    i.names.iter().any(|a| a.asname.as_ref().unwrap_or(&a.name).as_str() == self.name)
                }
                Stmt::Global(g) => g.names.iter().any(|n| n.as_str() == self.name),
                Stmt::Nonlocal(g) => g.names.iter().any(|n| n.as_str() == self.name),
                _ => false,
            };
            self.found |= hit;
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(n) = expr
                && n.id.as_str() == self.name
                && !matches!(n.ctx, ruff_python_ast::ExprContext::Load)
            {
                self.found = true;
            }
            visitor::walk_expr(self, expr);
        }
        fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
            let ExceptHandler::ExceptHandler(h) = handler;
            self.found |= h.name.as_ref().is_some_and(|n| n.as_str() == self.name);
            visitor::walk_except_handler(self, handler);
        }
        fn visit_pattern(&mut self, pattern: &'a Pattern) {
            let bound = match pattern {
                Pattern::MatchAs(p) => p.name.as_ref(),
                Pattern::MatchStar(p) => p.name.as_ref(),
                Pattern::MatchMapping(p) => p.rest.as_ref(),
                _ => None,
            };
            self.found |= bound.is_some_and(|n| n.as_str() == self.name);
            visitor::walk_pattern(self, pattern);
        }
    }
    let mut b = Binds { name, found: false };
    b.visit_stmt(stmt);
    b.found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::ParsedFile;
    use std::path::PathBuf;

    fn run(src: &str, upstream: Option<bool>) -> (ParsedFile, Vec<Problem>) {
        let file = ParsedFile::parse(PathBuf::from("c.py"), src).expect("parses");
        let problems = {
            let Stmt::FunctionDef(f) = file.body().iter().rev().find(|s| matches!(s, Stmt::FunctionDef(_))).unwrap()
            else {
                unreachable!()
            };
            analyze(f, upstream)
        };
        (file, problems)
    }

    /// The text a range covers.
    fn text(file: &ParsedFile, r: TextRange) -> &str {
        &file.text[r]
    }

    fn loss_before_slice(src: &str) -> Option<(String, String)> {
        let (file, problems) = run(src, Some(true));
        problems.iter().find_map(|p| match p {
            Problem::LossBeforeSlice { call, argument, .. } => {
                Some((text(&file, *call).to_string(), text(&file, *argument).to_string()))
            }
            Problem::MissingParameter => None,
        })
    }

    const VEOMNI_D977_SHAPE: &str = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    loss = None
    logits = None
    if labels is not None:
        if veomni_causal_lm_loss.use_non_eager_impl:
            loss, logits, aux = veomni_causal_lm_loss(logits=logits, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight, **kwargs)
        else:
            logits = self.lm_head(hidden_states)
            loss, _, aux = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states, **kwargs)
    else:
        logits = self.lm_head(hidden_states[:, slice_indices, :])
    return Out(loss=loss, logits=logits)
"#;

    #[test]
    fn slice_only_in_the_no_labels_branch_fires_on_the_first_loss_call() {
        assert_eq!(
            loss_before_slice(VEOMNI_D977_SHAPE),
            Some(("veomni_causal_lm_loss".to_string(), "hidden_states".to_string()))
        );
    }

    #[test]
    fn slice_first_is_clean() {
        let fixed = VEOMNI_D977_SHAPE
            .replace("    loss = None\n", "    hidden_states = hidden_states[:, slice_indices, :]\n    loss = None\n");
        assert_eq!(loss_before_slice(&fixed), None);
    }

    #[test]
    fn upstream_shape_is_clean() {
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
    logits = self.lm_head(hidden_states[:, slice_indices, :])
    loss = None
    if labels is not None:
        loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)
    return Out(loss=loss, logits=logits)
"#;
        assert_eq!(loss_before_slice(src), None);
    }

    #[test]
    fn renamed_variables_and_inline_keep() {
        // No `slice_indices` local, the hidden states called `h`, the loss a
        // differently named helper, positional arguments.
        let src = r#"
def fwd(self, ids=None, labels=None, logits_to_keep: int = 0, **kw):
    h = self.model(ids, **kw)[0]
    if labels is not None:
        loss = my_fused_loss(h, self.lm_head.weight, labels)
        logits = None
    else:
        loss = None
        logits = self.lm_head(h[:, -logits_to_keep:, :])
    return loss, logits
"#;
        assert_eq!(loss_before_slice(src), Some(("my_fused_loss".to_string(), "h".to_string())));
    }

    #[test]
    fn slicing_logits_but_feeding_unsliced_hidden_states_fires() {
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    keep = slice(-logits_to_keep, None)
    logits = self.lm_head(hidden_states[:, keep, :])
    if labels is not None:
        loss = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states)
    return logits
"#;
        assert_eq!(loss_before_slice(src), Some(("self.loss_function".to_string(), "hidden_states".to_string())));
    }

    #[test]
    fn slicing_guarded_by_keep_counts_as_applied() {
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if logits_to_keep:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
        assert_eq!(loss_before_slice(src), None);
    }

    #[test]
    fn slicing_in_an_unrelated_branch_before_the_loss_fires() {
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if self.training:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
        assert_eq!(loss_before_slice(src), Some(("self.loss_function".to_string(), "hidden_states".to_string())));
    }

    #[test]
    fn attribute_base_and_load_balancing_loss() {
        // The slice is taken on `outputs.last_hidden_state` directly; the
        // router loss on unsliced router logits is not a token loss.
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids)
    aux = load_balancing_loss_func(outputs.last_hidden_state, 4)
    hs = outputs.last_hidden_state[:, slice(-logits_to_keep, None), :]
    loss = self.loss_function(hidden_states=hs, labels=labels)
    return loss
"#;
        assert_eq!(loss_before_slice(src), None);
        let bad = src.replace("hidden_states=hs", "hidden_states=outputs.last_hidden_state");
        assert_eq!(
            loss_before_slice(&bad),
            Some(("self.loss_function".to_string(), "outputs.last_hidden_state".to_string()))
        );
    }

    #[test]
    fn missing_parameter_only_when_upstream_has_it() {
        let src =
            "def forward(self, input_ids=None, labels=None, **kwargs):\n    return self.loss_function(labels=labels)\n";
        assert_eq!(run(src, Some(true)).1, vec![Problem::MissingParameter]);
        assert_eq!(run(src, Some(false)).1, vec![]);
        assert_eq!(run(src, None).1, vec![]);
    }

    /// The python block after `heading` in the rule's documentation.
    fn doc_block(heading: &str) -> String {
        let doc: String = RULE
            .doc
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        let rest = &doc[doc.find(heading).expect("heading") + heading.len()..];
        let start = rest.find("```python\n").expect("a python block") + "```python\n".len();
        rest[start..start + rest[start..].find("```").unwrap()].to_string()
    }

    fn fixed(src: &str) -> Option<String> {
        fixed_function_source(src).map(|(text, _)| text)
    }

    #[test]
    fn the_fix_turns_the_doc_example_into_use_instead() {
        let example = doc_block("## Example");
        let (text, fix) = fixed_function_source(&example).expect("a fix");
        assert_eq!(text, doc_block("## Use instead"));
        assert_eq!((fix.var.as_str(), fix.index.as_str()), ("hidden_states", ":, slice_indices, :"));
        assert!(fix.after.starts_with("slice_indices = slice(-logits_to_keep, None)"), "{}", fix.after);
        assert!(fix.help().contains("insert `hidden_states = hidden_states[:, slice_indices, :]` right after"));
    }

    /// What `fix` must make of `VEOMNI_D977_SHAPE`, written by hand.
    const VEOMNI_D977_SHAPE_FIXED: &str = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs.last_hidden_state
    slice_indices = (
        slice(-logits_to_keep, None) if isinstance(logits_to_keep, int)
        else logits_to_keep
    )
    hidden_states = hidden_states[:, slice_indices, :]
    loss = None
    logits = None
    if labels is not None:
        if veomni_causal_lm_loss.use_non_eager_impl:
            loss, logits, aux = veomni_causal_lm_loss(
                logits=logits, labels=labels, hidden_states=hidden_states, weights=self.lm_head.weight, **kwargs
            )
        else:
            logits = self.lm_head(hidden_states)
            loss, _, aux = self.loss_function(logits=logits, labels=labels, hidden_states=hidden_states, **kwargs)
    else:
        logits = self.lm_head(hidden_states)
    return Out(loss=loss, logits=logits)
"#;

    /// python3's `ast.dump` of each source (formatting and comments aside).
    fn python_ast(sources: &[&str]) -> Vec<String> {
        let program = "import ast, sys\nfor src in sys.argv[1:]:\n    print(ast.dump(ast.parse(src)))\n";
        let out = std::process::Command::new("python3").arg("-c").arg(program).args(sources).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn the_fixed_veomni_shape_is_the_hand_written_one_and_clean() {
        let text = fixed(VEOMNI_D977_SHAPE).expect("a fix");
        let asts = python_ast(&[&text, VEOMNI_D977_SHAPE_FIXED]);
        assert_eq!(asts[0], asts[1], "{text}");
        assert_eq!(loss_before_slice(&text), None);
        // Only the forward's own lines changed: one inserted, one slice replaced.
        let before: Vec<&str> = VEOMNI_D977_SHAPE.lines().collect();
        let after: Vec<&str> = text.lines().collect();
        assert_eq!(after.len(), before.len() + 1);
    }

    #[test]
    fn the_fix_slices_a_directly_used_keep_where_it_is_needed() {
        // No keep local: `logits_to_keep` inline, the hidden states `h`.
        let src = r#"
def fwd(self, ids=None, labels=None, logits_to_keep: int = 0, **kw):
    h = self.model(ids, **kw)[0]
    if labels is not None:
        loss = my_fused_loss(h, self.lm_head.weight, labels)
        logits = None
    else:
        loss = None
        logits = self.lm_head(h[:, -logits_to_keep:, :])
    return loss, logits
"#;
        let want = src
            .replace("[0]\n", "[0]\n    h = h[:, -logits_to_keep:, :]\n")
            .replace("self.lm_head(h[:, -logits_to_keep:, :])", "self.lm_head(h)");
        assert_eq!(fixed(src).as_deref(), Some(want.as_str()));
        assert_eq!(loss_before_slice(&want), None);
    }

    #[test]
    fn no_fix_when_it_is_not_unambiguous() {
        // The slice only under an unrelated condition.
        let src = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    hidden_states = self.model(input_ids).last_hidden_state
    if self.training:
        hidden_states = hidden_states[:, -logits_to_keep:, :]
    loss = self.loss_function(hidden_states=hidden_states, labels=labels)
    return loss
"#;
        assert_eq!(fixed(src), None);
        // The unsliced value is an attribute, not a plain name.
        let attr = r#"
def forward(self, input_ids=None, labels=None, logits_to_keep=0, **kwargs):
    outputs = self.model(input_ids)
    loss = self.loss_function(hidden_states=outputs.last_hidden_state, labels=labels)
    logits = self.lm_head(outputs.last_hidden_state[:, -logits_to_keep:, :])
    return loss, logits
"#;
        assert_eq!(fixed(attr), None);
        // Two slice forms.
        let two = VEOMNI_D977_SHAPE.replace(
            "            logits = self.lm_head(hidden_states)\n",
            "            logits = self.lm_head(hidden_states[:, -logits_to_keep:, :])\n",
        );
        assert_eq!(fixed(&two), None);
        // The hidden states also leave the function (slicing would change the output).
        let out = VEOMNI_D977_SHAPE
            .replace("Out(loss=loss, logits=logits)", "Out(loss=loss, logits=logits, last=hidden_states)");
        assert_eq!(fixed(&out), None);
        // The keep local bound inside a branch.
        let branch = VEOMNI_D977_SHAPE.replace(
            "    slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n",
            "    if labels is None:\n        slice_indices = slice(-logits_to_keep, None)\n",
        );
        assert_eq!(fixed(&branch), None);
        // Nothing to fix: clean, or the parameter dropped.
        assert_eq!(
            fixed(&VEOMNI_D977_SHAPE.replace(
                "    loss = None\n",
                "    hidden_states = hidden_states[:, slice_indices, :]\n    loss = None\n"
            )),
            None
        );
        assert_eq!(
            fixed(
                "def forward(self, input_ids=None, labels=None, **kwargs):\n    return self.loss_function(labels=labels)\n"
            ),
            None
        );
    }

    #[test]
    fn the_fix_of_a_method_keeps_the_class_indentation() {
        let src = format!(
            "class Qwen3ForCausalLM:\n{}",
            VEOMNI_D977_SHAPE
                .lines()
                .map(|l| if l.is_empty() { String::new() } else { format!("    {l}") })
                .collect::<Vec<_>>()
                .join("\n")
        );
        let file = ParsedFile::parse(PathBuf::from("c.py"), &src).expect("parses");
        let Stmt::ClassDef(class) = &file.body()[0] else { unreachable!() };
        let forward = pyfacts::method(class, "forward").unwrap();
        let fix = fix(forward, &src).expect("a fix");
        let text = apply(&src, &fix.edits);
        assert!(text.contains("\n        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep\n        hidden_states = hidden_states[:, slice_indices, :]\n"), "{text}");
    }

    #[test]
    fn targets() {
        assert!(is_target("Qwen3ForCausalLM.forward"));
        assert!(is_target("Qwen3VLMoeForConditionalGeneration.forward"));
        assert!(!is_target("Qwen3ForSequenceClassification.forward"));
        assert!(!is_target("Qwen3ForCausalLM.get_parallel_plan"));
        assert!(!is_target("Qwen3ForCausalLM"));
    }
}
