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
                    let mut d = RULE
                        .diagnostic(format!(
                            "`{target}`: `{callee}(...)` receives `{arg}` before it is sliced with `{PARAM}`; with labels and `{PARAM} > 0` the loss covers every position"
                        ))
                        .help("slice first (`hidden_states = hidden_states[:, slice_indices, :]` before `if labels is not None:`), then compute logits and loss from the sliced tensor");
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

    #[test]
    fn targets() {
        assert!(is_target("Qwen3ForCausalLM.forward"));
        assert!(is_target("Qwen3VLMoeForConditionalGeneration.forward"));
        assert!(!is_target("Qwen3ForSequenceClassification.forward"));
        assert!(!is_target("Qwen3ForCausalLM.get_parallel_plan"));
        assert!(!is_target("Qwen3ForCausalLM"));
    }
}
