//! Which classes of a (generated or upstream) modeling module hold fused
//! expert parameters: an assignment `self.gate_up_proj = nn.Parameter(...)`
//! (also `torch.nn.Parameter(`, `Parameter(`, over any number of lines)
//! anywhere in a method of the class, found on the AST, never by text.
//!
//! Used by `moe inspect` (does the project's generated class expect the
//! fused layout?) and lint rule PG401 (a fused class needs a converter when
//! the upstream recipe says the checkpoint is per-expert or transposed).

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use serde::Serialize;

use patchgen_python::semantic::facts;
use patchgen_python::semantic::walk::{self, Scope};

/// A class with fused expert parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FusedExperts {
    pub class: String,
    /// 1-based line of the `gate_up_proj` assignment.
    pub line: usize,
    /// `self.down_proj = nn.Parameter(...)` is there too.
    pub down_proj: bool,
    /// `self.gate_up_proj_bias = nn.Parameter(...)` (gpt_oss-style biases).
    pub bias: bool,
}

/// The classes (at any depth, in source order) of `text` that
/// assign `self.gate_up_proj` an `nn.Parameter`. `Err` is a syntax error
/// with its 1-based line.
pub fn fused_expert_classes(text: &str) -> Result<Vec<FusedExperts>, (usize, String)> {
    let index = patchgen_diagnostics::LineIndex::new(text);
    let line_of = |offset: usize| index.line_of(offset.min(text.len()));
    let parsed = ruff_python_parser::parse_module(text)
        .map_err(|e| (line_of(e.location.start().into()), e.error.to_string()))?;
    Ok(fused_expert_classes_in(&parsed.syntax().body, &line_of))
}

/// [`fused_expert_classes`] over an already parsed module body (lint has
/// the generated module parsed); `line_of` maps a byte offset to its
/// 1-based line.
pub fn fused_expert_classes_in(body: &[Stmt], line_of: &dyn Fn(usize) -> usize) -> Vec<FusedExperts> {
    let mut out = Vec::new();
    for stmt in walk::statements(body, Scope::All) {
        let Stmt::ClassDef(class) = stmt else { continue };
        let mut params: Vec<(String, usize)> = Vec::new();
        for stmt in &class.body {
            if let Stmt::FunctionDef(f) = stmt {
                walk::for_each_statement(&f.body, Scope::Own, |s| {
                    if let Stmt::Assign(a) = s
                        && is_parameter_call(&a.value)
                    {
                        for t in &a.targets {
                            if let Expr::Attribute(at) = t
                                && matches!(&*at.value, Expr::Name(n) if n.id.as_str() == "self")
                            {
                                params.push((at.attr.to_string(), line_of(a.start().into())));
                            }
                        }
                    }
                });
            }
        }
        if let Some((_, line)) = params.iter().find(|(n, _)| n == "gate_up_proj") {
            out.push(FusedExperts {
                class: class.name.to_string(),
                line: *line,
                down_proj: params.iter().any(|(n, _)| n == "down_proj"),
                bias: params.iter().any(|(n, _)| n == "gate_up_proj_bias"),
            });
        }
    }
    out
}

fn is_parameter_call(e: &Expr) -> bool {
    matches!(e, Expr::Call(c) if facts::last_ident(&c.func) == Some("Parameter"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fused_parameters_over_several_lines() {
        let src = "import torch\nfrom torch import nn\n\nclass Dense(nn.Module):\n    def __init__(self):\n        self.gate_up_proj = nn.Linear(4, 8)\n\n\
class Experts(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        if config.x:\n            self.gate_up_proj = torch.nn.Parameter(\n                torch.empty(2, 3, 4)\n            )\n        self.down_proj = nn.Parameter(torch.empty(1))\n\n\
class Oss(nn.Module):\n    def __init__(self):\n        self.gate_up_proj = Parameter(x)\n        self.gate_up_proj_bias = nn.Parameter(y)\n";
        let found = fused_expert_classes(src).unwrap();
        assert_eq!(
            found,
            vec![
                FusedExperts { class: "Experts".into(), line: 12, down_proj: true, bias: false },
                FusedExperts { class: "Oss".into(), line: 19, down_proj: false, bias: true },
            ]
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        assert_eq!(fused_expert_classes("x = 1\nclass (:\n").unwrap_err().0, 2);
    }
}
