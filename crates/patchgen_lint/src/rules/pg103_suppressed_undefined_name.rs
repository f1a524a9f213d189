//! PG103 suppressed-undefined-name: a name on a `# noqa: F821` line of the generated module that nothing binds.
//!
//! ## What it does
//! On every line of the generated module that carries `# noqa: F821` (or a
//! bare `# noqa`), checks each name the code reads against Python's scoping:
//! the enclosing functions' parameters and locals, comprehension and lambda
//! variables, and the module's bindings (classes, functions, assignments,
//! imports — including those inside `try`/`if` blocks), plus builtins. A
//! name none of them binds is reported at the config line that wrote it.
//!
//! ## Why is this bad?
//! ruff's F821 is the only undefined-name gate generation has, and `noqa`
//! switches it off for the whole line. A suppression written for one name
//! defined later by `add_post_import_block` also hides a misspelt or
//! removed name on the same line; the generated module then raises
//! `NameError` only when that code path runs — often only on one device
//! type or in a worker process.
//!
//! ## Example
//! ```python
//! config.add_post_import_block("from .helpers import FakeForPosID")
//!
//! @config.override_method("Model.get_position_id_func")
//! def get_position_id_func(self):
//!     return partial(get_position_id, FakeForPosId(self.config))  # noqa: F821
//! ```
//!
//! ## Use instead
//! ```python
//!     return partial(get_position_id, FakeForPosID(self.config))  # noqa: F821
//! ```
//! Better still, bind the name with `add_import` so no suppression is needed.

use super::super::{LintContext, Rule, noqa};
use patchgen_core::survey::names::free_name_uses_in;
use patchgen_diagnostics::{Diagnostic, Severity};
use ruff_text_size::Ranged;

pub const RULE: Rule = Rule {
    code: "PG103",
    name: "suppressed-undefined-name",
    default_on: true,
    severity: Severity::Error,
    doc: include_str!("pg103_suppressed_undefined_name.rs"),
    check,
    check_project: None,
};

fn suppresses_f821(line: &str) -> bool {
    noqa::parse(line).is_some_and(|n| n.suppresses("F821"))
}

/// For each line (`str.splitlines()`; index 0 is line 1) whether it holds
/// a `noqa` that covers F821. When `\n` is the only line break the lines
/// holding the word are found directly, not by splitting the module.
fn noqa_f821_lines(file: &patchgen_python::pysource::ParsedFile) -> Vec<bool> {
    if !file.only_newline_breaks() {
        return file.splitlines().iter().map(|l| l.contains("noqa") && suppresses_f821(l)).collect();
    }
    let mut flags = vec![false; file.line_count()];
    let mut last = 0;
    for hit in memchr::memmem::find_iter(file.text.as_bytes(), b"noqa") {
        let line = file.line_of(ruff_text_size::TextSize::new(hit as u32));
        if line == last {
            continue;
        }
        last = line;
        let text = file.line_range(line, line);
        flags[line - 1] = suppresses_f821(text.strip_suffix('\n').unwrap_or(text));
    }
    flags
}

fn check(ctx: &LintContext) -> Vec<Diagnostic> {
    // Every line below must contain `noqa` to count: a module without the
    // word has nothing to report (and need not be split into lines).
    if !ctx.generated.text.contains("noqa") {
        return Vec::new();
    }
    let noqa_lines = noqa_f821_lines(&ctx.generated);
    if !noqa_lines.iter().any(|b| *b) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let wanted = |stmt: &ruff_python_ast::Stmt| {
        let (first, last) = (ctx.generated.line_of(stmt.start()), ctx.generated.line_of(stmt.end()));
        noqa_lines.get(first.saturating_sub(1)..last.min(noqa_lines.len())).is_some_and(|s| s.iter().any(|b| *b))
    };
    for (name, at) in free_name_uses_in(ctx.generated.body(), wanted) {
        let line = ctx.generated.line_of(at);
        // A name read in a multi-line statement counts on its own line.
        if !noqa_lines.get(line - 1).copied().unwrap_or(false) {
            continue;
        }
        let d = RULE
            .diagnostic(format!(
                "`{name}` is undefined in the generated module `{}`; `# noqa: F821` hides it from ruff, so it raises NameError when this line runs",
                ctx.plan.target_file
            ))
            .help(format!("bind `{name}` (`config.add_import(...)`, `add_post_import_block`, a helper) or fix the name; then drop the `noqa` if nothing else needs it"));
        out.push(ctx.at_generated(d, at, None));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchgen_python::pysource::ParsedFile;
    use proptest::prelude::*;

    proptest! {
        /// The lines found by searching for the word are the lines
        /// `str.splitlines()` gives that hold a covering `noqa`.
        #[test]
        fn noqa_lines_found_directly_are_the_split_ones(
            parts in prop::collection::vec(
                prop::sample::select(vec![
                    "x = 1", "\n", "  # noqa", "# noqa: F821", "# noqa: E501", "noqa", "y(z)", " ", "\r\n", "\x0c", "é",
                ]),
                0..40,
            ),
        ) {
            let text = parts.concat();
            let Ok(file) = ParsedFile::parse("m.py".into(), &text) else { return Ok(()) };
            let split: Vec<bool> =
                file.splitlines().iter().map(|l| l.contains("noqa") && suppresses_f821(l)).collect();
            let found = noqa_f821_lines(&file);
            // The direct search also counts the empty line after a final `\n`.
            prop_assert!(found.len() >= split.len());
            prop_assert_eq!(&found[..split.len()], &split[..]);
            prop_assert!(found[split.len()..].iter().all(|b| !b));
        }
    }
}
