//! MoE blocks behind a hub kernel: an upstream class that builds the
//! experts (its `__init__` assigns `self.experts`/`self.router`) and is
//! decorated with `@use_kernel_forward_from_hub("...")` (gpt_oss's
//! `GptOssMLP`, "MegaBlocksMoeMLP"; llama4's `Llama4TextMoe` in 5.9.0) can
//! have its whole `forward` swapped for a hub kernel, routing around the
//! (patched) experts class without an error.
//!
//! `new` replaces such a class with the upstream class *verbatim* minus
//! that decorator (`replace_class`, the other decorators kept), as VeOmni's
//! gpt_oss config does by hand ("Drop upstream MegaBlocks hub decorator
//! and route through patched GptOssExperts"). Nothing else changes: the
//! block's math is upstream's, only the dispatch point is closed. A class
//! another carried patch already targets is left alone (reported).

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{Expr, Stmt, StmtClassDef};
use ruff_text_size::Ranged;

use super::facts::ModelFacts;
use super::ruff_findings::UpstreamOverride;
use patchgen_python::pysource::names::LoadedNames;

/// The decorator this module removes.
pub const HUB_DECORATOR: &str = "use_kernel_forward_from_hub";

/// The hub decorator of a class, as written (`use_kernel_forward_from_hub("MegaBlocksMoeMLP")`).
fn hub_decorator<'a>(class: &StmtClassDef, text: &'a str) -> Option<(&'a str, ruff_text_size::TextRange)> {
    class.decorator_list.iter().find_map(|d| {
        let callee = match &d.expression {
            Expr::Call(c) => &*c.func,
            e => e,
        };
        let name = match callee {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return None,
        };
        (name == HUB_DECORATOR).then(|| (&text[d.expression.range()], d.range()))
    })
}

/// The MoE blocks of the new module kept behind a hub kernel, each as a
/// `replace_class` with the upstream class verbatim minus the decorator.
/// `targeted`: the targets other patches already have (such a class is
/// skipped and said in the second list).
pub fn undecorated_moe_blocks(new: &ModelFacts, targeted: &[String]) -> (Vec<UpstreamOverride>, Vec<String>) {
    let text = new.file.text.as_str();
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for stmt in new.file.body() {
        let Stmt::ClassDef(class) = stmt else { continue };
        let Some((deco, deco_range)) = hub_decorator(class, text) else { continue };
        if !patchgen_lint::pyfacts::builds_experts(class, text) {
            continue;
        }
        let name = class.name.as_str();
        let prefix = format!("{name}.");
        if targeted.iter().any(|t| t == name || t.starts_with(&prefix)) {
            skipped.push(format!(
                "`{name}` is the MoE block and keeps `@{deco}` (another patch targets it): a hub kernel can replace its forward and route around the experts; drop the decorator by hand"
            ));
            continue;
        }
        // The class from its first decorator on, that decorator's line removed.
        let start = class.start().to_usize();
        let deco_line_start = text[..deco_range.start().to_usize()].rfind('\n').map_or(0, |i| i + 1);
        let deco_line_end =
            text[deco_range.end().to_usize()..].find('\n').map_or(text.len(), |i| deco_range.end().to_usize() + i + 1);
        let mut source = String::new();
        source.push_str(&text[start.min(deco_line_start)..deco_line_start]);
        source.push_str(&text[deco_line_end..class.end().to_usize()]);
        let function = format!("Patched{name}");
        source = source.replacen(&format!("class {name}("), &format!("class {function}("), 1);
        source = source.replacen(&format!("class {name}:"), &format!("class {function}:"), 1);
        source.push('\n');
        let Ok(parsed) = ruff_python_parser::parse_module(&source) else { continue };
        // Names the class reads (bases, decorators kept, bodies), in order.
        let mut loads = LoadedNames::default();
        for s in parsed.syntax().body.iter() {
            loads.visit_stmt(s);
        }
        let imports: Vec<String> = loads
            .0
            .iter()
            .filter(|n| **n != function)
            .filter_map(|n| super::ruff_findings::binding_import(new, n))
            .collect();
        out.push(UpstreamOverride {
            patch_type: "replace_class",
            target: name.to_string(),
            function,
            codes: Vec::new(),
            todo: format!(
                "patchgen new: `{name}` is the MoE block (its `__init__` builds the experts) and upstream decorates it with `@{deco}`, which lets a hub kernel replace its forward and route around the experts; the upstream class verbatim without that decorator"
            ),
            description: format!("Drop upstream `@{deco}` so the experts class is always the MoE implementation (patchgen new)"),
            source,
            imports,
        });
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moe_block_loses_only_the_hub_decorator() {
        let src = "from torch import nn\nfrom .x import use_kernel_forward_from_hub, other\n\n\nclass ToyExperts(nn.Module):\n    pass\n\n\n@other\n@use_kernel_forward_from_hub(\"MegaBlocksMoeMLP\")\nclass ToyMLP(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        self.experts = ToyExperts(config)\n\n    def forward(self, x):\n        return self.experts(x)\n\n\n@use_kernel_forward_from_hub(\"RMSNorm\")\nclass ToyRMSNorm(nn.Module):\n    def __init__(self):\n        self.w = 1\n";
        let file = patchgen_python::pysource::ParsedFile::parse("modeling_toy.py".into(), src).unwrap();
        let facts = ModelFacts {
            hf_name: "toy".into(),
            module: "transformers.models.toy.modeling_toy".into(),
            file: std::sync::Arc::new(file),
            prefix: "Toy".into(),
            all: Vec::new(),
            classes: vec!["ToyExperts".into(), "ToyMLP".into(), "ToyRMSNorm".into()],
            functions: Vec::new(),
        };
        let (o, skipped) = undecorated_moe_blocks(&facts, &[]);
        assert!(skipped.is_empty());
        assert_eq!(o.len(), 1, "the norm is no MoE block");
        assert_eq!(o[0].target, "ToyMLP");
        assert_eq!(
            o[0].source,
            "@other\nclass PatchedToyMLP(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n        self.experts = ToyExperts(config)\n\n    def forward(self, x):\n        return self.experts(x)\n"
        );
        assert_eq!(
            o[0].imports,
            vec![
                "from transformers.models.toy.x import other".to_string(),
                "from torch import nn".to_string(),
                "from transformers.models.toy.modeling_toy import ToyExperts".to_string()
            ]
        );
        let (o, skipped) = undecorated_moe_blocks(&facts, &["ToyMLP.forward".to_string()]);
        assert!(o.is_empty() && skipped.len() == 1);
    }
}
