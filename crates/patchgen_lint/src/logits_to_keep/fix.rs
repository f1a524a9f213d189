//! PG301's fix: slice first. Offered only when it is unambiguous (see
//! [`fix`]); the fixed function is analysed again before it is offered.

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};

use super::flow::{is_loss_call, keep_names};
use super::{PARAM, Problem, analyze};
use crate::fix::{Edit, apply};
use crate::pyfacts;
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

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
    let slices: Vec<&ruff_python_ast::ExprSubscript> = walk::expressions(body, Scope::All)
        .into_iter()
        .filter_map(|e| match e {
            Expr::Subscript(s) if matches!(&*s.value, Expr::Name(n) if n.id.as_str() == var) => Some(s),
            _ => None,
        })
        .filter(|s| walk::mentions(&s.slice, &is_keep))
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
    for e in walk::sub_expressions(&first.slice) {
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
        let exprs = walk::expressions(std::slice::from_ref(stmt), Scope::All);
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
                && (is_loss_call(&c.func) || facts::last_ident(&c.func).is_some_and(|n| n.contains("head")))
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
    fixed_is_clean(func, text, &fix.edits).then_some(fix)
}

/// Whether `func` (parsed from `text`) with `edits` (inside it) applied has
/// no loss-before-slice. Only the function is parsed again: its lines, cut
/// from the module and, when indented, put in a one-line class so that they
/// parse alone (`analyze` reads only the function). A function that does
/// not start its line is checked by parsing the whole fixed module.
pub(super) fn fixed_is_clean(func: &StmtFunctionDef, text: &str, edits: &[Edit]) -> bool {
    let (start, end) = (func.start().to_usize(), func.end().to_usize());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..start];
    if !indent.bytes().all(|b| b == b' ' || b == b'\t') {
        let fixed = apply(text, edits);
        let again = ruff_python_parser::parse_module(&fixed)
            .ok()
            .and_then(|parsed| function_at(&parsed.syntax().body, func.start()).map(|f| analyze(f, None).is_empty()));
        return again.unwrap_or(false);
    }
    let Ok(base) = ruff_text_size::TextSize::try_from(line_start) else { return false };
    let mut shifted = Vec::with_capacity(edits.len());
    for e in edits {
        if e.range.start().to_usize() < line_start || e.range.end().to_usize() > end {
            return false;
        }
        shifted.push(Edit { range: e.range - base, content: e.content.clone() });
    }
    let alone = apply(&text[line_start..end], &shifted);
    let source = if indent.is_empty() { alone } else { format!("class _:\n{alone}\n") };
    let Ok(parsed) = ruff_python_parser::parse_module(&source) else { return false };
    let body = &parsed.syntax().body;
    let func = match body.first() {
        Some(Stmt::ClassDef(c)) if !indent.is_empty() => c.body.first(),
        first => first,
    };
    matches!(func, Some(Stmt::FunctionDef(f)) if analyze(f, None).is_empty())
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
