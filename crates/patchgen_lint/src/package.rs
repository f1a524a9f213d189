//! What a model package's `__init__.py` declares, read from its AST: the
//! registry functions (`@MODELING_REGISTRY.register("<model_type>")`) with
//! their keys and lines, the classes they return, and the class attributes
//! they assign (`Cls._create_checkpoint_tensor_converter = staticmethod(f)`).
//! Shared by PG306, PG401, PG402 and PG502.

use ruff_python_ast::{Expr, ExprContext, Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::{
    facts,
    walk::{self, Scope},
};

/// One `@<REGISTRY>.register("key")` function.
pub struct Registration<'a> {
    /// The registry's name (`MODELING_REGISTRY`).
    pub registry: String,
    pub key: String,
    /// 1-based line of the decorator.
    pub line: usize,
    pub function: &'a StmtFunctionDef,
}

/// Every registry function of a package `__init__.py`, in source order.
pub fn registrations(init: &ParsedFile) -> Vec<Registration<'_>> {
    let mut out = Vec::new();
    for stmt in init.body() {
        let Stmt::FunctionDef(f) = stmt else { continue };
        for d in &f.decorator_list {
            let Expr::Call(c) = &d.expression else {
                continue;
            };
            let Expr::Attribute(a) = &*c.func else {
                continue;
            };
            if a.attr.id.as_str() != "register" {
                continue;
            }
            let Some(Expr::StringLiteral(key)) = c.arguments.args.first() else {
                continue;
            };
            out.push(Registration {
                registry: facts::dotted(&a.value).unwrap_or_default(),
                key: key.value.to_str().to_string(),
                line: init.line_of(d.start()),
                function: f,
            });
        }
    }
    out
}

/// The model registrations (registry named `MODELING_REGISTRY`, or any
/// registry when the package uses another name).
pub fn model_registrations(init: &ParsedFile) -> Vec<Registration<'_>> {
    let all = registrations(init);
    if all.iter().any(|r| r.registry.ends_with("MODELING_REGISTRY")) {
        all.into_iter().filter(|r| r.registry.ends_with("MODELING_REGISTRY")).collect()
    } else {
        all
    }
}

/// Names a registration function returns (`return Qwen3ForCausalLM`).
pub fn returned_names(function: &StmtFunctionDef) -> Vec<String> {
    let mut out = Vec::new();
    walk::for_each_statement(&function.body, Scope::Own, |s| {
        if let Stmt::Return(r) = s
            && let Some(Expr::Name(n)) = r.value.as_deref()
        {
            out.push(n.id.to_string());
        }
    });
    out
}

/// Assignments `<something>.<attr> = value` anywhere in the file: the
/// assigned values with their 1-based lines.
pub fn attribute_assignments<'a>(init: &'a ParsedFile, attr: &str) -> Vec<(&'a Expr, usize)> {
    let mut out = Vec::new();
    let mut visit = |stmt: &'a Stmt| {
        if let Stmt::Assign(a) = stmt {
            for t in &a.targets {
                if let Expr::Attribute(at) = t
                    && at.attr.id.as_str() == attr
                    && at.ctx == ExprContext::Store
                {
                    out.push((&*a.value, init.line_of(a.start())));
                }
            }
        }
    };
    walk::for_each_statement(init.body(), Scope::All, &mut visit);
    out
}

/// The attribute that registers a checkpoint converter factory.
pub const CONVERTER_ATTR: &str = "_create_checkpoint_tensor_converter";

/// The factory name a converter registration assigns
/// (`staticmethod(create_x)` or `create_x`), with its line.
pub fn converter_factories(init: &ParsedFile) -> Vec<(String, usize)> {
    attribute_assignments(init, CONVERTER_ATTR)
        .into_iter()
        .filter_map(|(value, line)| {
            let inner = match value {
                Expr::Call(c) if facts::last_ident(&c.func) == Some("staticmethod") => c.arguments.args.first()?,
                other => other,
            };
            let name = match inner {
                Expr::Call(c) => facts::dotted(&c.func)?,
                other => facts::dotted(other)?,
            };
            Some((name, line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn registrations_and_converters() {
        let src = r#"from ...loader import MODELING_REGISTRY

@MODELING_REGISTRY.register("qwen3_moe")
def register(architecture: str):
    from .checkpoint_tensor_converter import create_conv
    from .generated.m import A, B
    for cls in (A, B):
        cls._create_checkpoint_tensor_converter = staticmethod(create_conv)
    if "Model" in architecture:
        return B
    return A

@MODEL_CONFIG_REGISTRY.register("qwen3_moe")
def cfg():
    return C
"#;
        let f = ParsedFile::parse(PathBuf::from("__init__.py"), src).unwrap();
        let regs = model_registrations(&f);
        assert_eq!(regs.len(), 1);
        assert_eq!((regs[0].key.as_str(), regs[0].line), ("qwen3_moe", 3));
        assert_eq!(returned_names(regs[0].function), ["B", "A"]);
        assert_eq!(converter_factories(&f), vec![("create_conv".to_string(), 8)]);
        assert_eq!(registrations(&f).len(), 2);
    }
}
