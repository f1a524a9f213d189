//! PG402 converter-shape-ambiguity: a converter that tells checkpoint layouts apart by shape, for a model whose configs make the shapes identical.
//!
//! ## What it does
//! For each model package that registers a checkpoint converter
//! (`_create_checkpoint_tensor_converter`), reads the converter's module and
//! decides whether it dispatches on shape: an `if` comparing a tensor's
//! `.shape` whose branches transpose. Unless the module raises on an
//! ambiguous layout (a `raise` whose message says "ambiguous"), every toy
//! config of the project (`tests/toy_config/*/config.json`) for one of the
//! package's `model_type`s is checked: the fused `gate_up_proj` layouts
//! `[E, 2I, H]` and `[E, H, 2I]` cannot be told apart when
//! `hidden_size == 2 * moe_intermediate_size`, nor `down_proj`'s `[E, H, I]`
//! and `[E, I, H]` when `hidden_size == moe_intermediate_size`.
//!
//! ## Why is this bad?
//! On such shapes the converter silently picks one branch: a checkpoint
//! already in the fused v5 layout (what VeOmni itself saves) gets transposed
//! a second time, and the experts load scrambled. Ordinary toy configs hit
//! this (`hidden=256, moe_intermediate=128`), so the tests that should
//! catch it exercise the wrong guess.
//!
//! ## Example
//! ```python
//! if tensor.shape[1] == hf_mid:      # [E, H, 2I] on disk
//!     converted = tensor.transpose(1, 2)
//! elif tensor.shape[1] == v5_mid:    # already [E, 2I, H]
//!     converted = tensor
//! ```
//!
//! ## Use instead
//! ```python
//! if tensor.shape == hf_shape == v5_shape:
//!     raise RuntimeError("ambiguous layout: matches both HF and v5; explicit source layout is required")
//! ```
//! and keep at least one toy config with `hidden_size` different from
//! `moe_intermediate_size` and from twice it.

use std::path::{Path, PathBuf};

use ruff_python_ast::{CmpOp, Expr, Stmt};
use ruff_text_size::Ranged;

use crate::{ProjectContext, Rule, package, toy_config};
use patchgen_diagnostics::{Diagnostic, Location, Severity};
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

pub const RULE: Rule = Rule {
    code: "PG402",
    name: "converter-shape-ambiguity",
    default_on: true,
    severity: Severity::Warning,
    doc: include_str!("pg402_converter_shape_ambiguity.rs"),
    check: |_| Vec::new(),
    check_project: Some(check_project),
};

/// Whether an expression reads a tensor's `.shape` (`t.shape[1]`, `t.shape`).
fn reads_shape(expr: &Expr) -> bool {
    walk::sub_expressions(expr).iter().any(|e| matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == "shape"))
}

/// The first `if` that compares a `.shape` with `==` and transposes in one
/// of its branches: the 1-based line.
pub fn shape_dispatch(module: &ParsedFile) -> Option<usize> {
    let mut found = None;
    let mut visit = |stmt: &Stmt| {
        let Stmt::If(i) = stmt else { return };
        if found.is_some() {
            return;
        }
        let mut tests = vec![&*i.test];
        tests.extend(i.elif_else_clauses.iter().filter_map(|c| c.test.as_ref()));
        let compares_shape = tests.iter().any(|t| {
            walk::sub_expressions(t).iter().any(
                |e| matches!(e, Expr::Compare(c) if c.ops.iter().any(|o| matches!(o, CmpOp::Eq)) && reads_shape(e)),
            )
        });
        if !compares_shape {
            return;
        }
        let mut bodies: Vec<&[Stmt]> = vec![&i.body];
        bodies.extend(i.elif_else_clauses.iter().map(|c| &c.body[..]));
        let transposes = bodies.iter().any(|b| {
            walk::expressions(b, Scope::Own).iter().any(|e| {
                matches!(e, Expr::Call(c) if matches!(facts::last_ident(&c.func), Some("transpose" | "permute" | "swapaxes")))
            })
        });
        if transposes {
            found = Some(module.line_of(i.start()));
        }
    };
    walk::for_each_statement(module.body(), Scope::All, &mut visit);
    found
}

/// Whether the module raises on an ambiguous layout.
pub fn raises_on_ambiguity(module: &ParsedFile) -> bool {
    let mut found = false;
    walk::for_each_statement(module.body(), Scope::All, |s| {
        if let Stmt::Raise(r) = s
            && let Some(exc) = &r.exc
            && walk::sub_expressions(exc).iter().any(|e| match e {
                Expr::StringLiteral(l) => l.value.to_str().to_ascii_lowercase().contains("ambiguous"),
                Expr::FString(f) => module.text[f.range()].to_ascii_lowercase().contains("ambiguous"),
                _ => false,
            })
        {
            found = true;
        }
    });
    found
}

/// Which fused projections a (hidden, moe_intermediate) pair makes ambiguous.
pub fn ambiguous(hidden: u64, intermediate: u64) -> Vec<&'static str> {
    let mut out = Vec::new();
    if hidden == 2 * intermediate {
        out.push("gate_up_proj ([E, 2I, H] vs [E, H, 2I])");
    }
    if hidden == intermediate {
        out.push("down_proj ([E, H, I] vs [E, I, H])");
    }
    out
}

/// The converter module a factory name is imported from in `init`.
fn factory_module(init: &ParsedFile, dir: &Path, factory: &str) -> Option<PathBuf> {
    let mut module: Option<String> = None;
    let mut level = 0;
    let mut visit = |s: &Stmt| {
        if let Stmt::ImportFrom(i) = s
            && i.names.iter().any(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str() == factory)
        {
            module = Some(i.module.as_ref().map(|m| m.id.to_string()).unwrap_or_default());
            level = i.level;
        }
    };
    walk::for_each_statement(init.body(), Scope::All, &mut visit);
    let module = module?;
    if level != 1 {
        return None;
    }
    let path = dir.join(module.replace('.', "/")).with_extension("py");
    path.is_file().then_some(path)
}

fn check_project(project: &ProjectContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (ctx, init) in project.package_inits() {
        let Some(dir) = init.path.parent() else {
            continue;
        };
        let keys: Vec<String> = package::model_registrations(init).into_iter().map(|r| r.key).collect();
        for (factory, _) in package::converter_factories(init) {
            let name = factory.rsplit('.').next().unwrap_or(&factory);
            let Some(path) = factory_module(init, dir, name) else {
                continue;
            };
            let Ok(module) = ctx.shared.pipeline.loader.parse_file(&path) else {
                continue;
            };
            let Some(line) = shape_dispatch(&module) else {
                continue;
            };
            if raises_on_ambiguity(&module) {
                continue;
            }
            for (toy, json) in ctx.shared.toy_configs() {
                let (types, hidden, inter) = toy_config::text_dims(json);
                let matches = keys.iter().any(|k| toy_config::is_for_model(&types, k));
                let (Some(h), Some(i)) = (hidden, inter) else {
                    continue;
                };
                if !matches {
                    continue;
                }
                let which = ambiguous(h, i);
                if which.is_empty() {
                    continue;
                }
                let d = RULE
                    .diagnostic(format!(
                        "`{name}` decides the expert layout by shape, but `{}` has hidden_size={h}, moe_intermediate_size={i}: {} cannot be told apart, and a checkpoint already fused is transposed again",
                        toy.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                        which.join(" and ")
                    ))
                    .help("raise on the ambiguous shapes (require an explicit source layout) instead of guessing; keep a toy config whose dims are not 1:1 or 2:1")
                    .at(Location::line(path.clone(), line))
                    .related(Location::file(toy.clone()), "toy config with ambiguous dims")
                    .config(ctx.module.clone());
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts::parsed as parse;

    #[test]
    fn dispatch_detection() {
        let dispatch = "class C:\n    def convert(self, name, tensor):\n        if tensor.ndim != 3:\n            raise RuntimeError('bad')\n        if tensor.shape[1] == self.hf_mid:\n            out = tensor.transpose(1, 2)\n        elif tensor.shape[1] == self.v5_mid:\n            out = tensor\n        return out\n";
        let m = parse(dispatch);
        assert_eq!(shape_dispatch(&m), Some(5));
        assert!(!raises_on_ambiguity(&m));
        let guarded = format!(
            "{dispatch}\ndef g(t, a, b):\n    if t.shape == a == b:\n        raise RuntimeError(f\"{{t}}: ambiguous layout\")\n"
        );
        assert!(raises_on_ambiguity(&parse(&guarded)));
        let stacker = "def convert(name, tensor, buf):\n    if len(buf) == 4:\n        return torch.stack(buf)\n";
        assert_eq!(shape_dispatch(&parse(stacker)), None);
    }

    #[test]
    fn ambiguity() {
        assert_eq!(ambiguous(256, 128).len(), 1);
        assert_eq!(ambiguous(16, 16).len(), 1);
        assert!(ambiguous(2048, 768).is_empty());
    }
}
