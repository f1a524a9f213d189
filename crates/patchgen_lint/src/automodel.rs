//! How a composite model builds its sub-models through the auto classes:
//! the `AutoModel*.from_config(<config>.<attr>)` calls of a class, the
//! configuration class a composite configuration's `sub_configs` names
//! for `<attr>`, and the class of the generated module such a call builds.
//! Shared by PG306 and `patchgen new`'s fix of it.

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtClassDef};

use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::facts;
use patchgen_python::semantic::walk::{self, Scope};

/// `AutoModel*.from_config(<config>.<attr>)` in the methods of a class:
/// the call and `<attr>`.
pub fn automodel_calls(class: &StmtClassDef) -> Vec<(&ExprCall, String)> {
    let mut out = Vec::new();
    for stmt in &class.body {
        let Stmt::FunctionDef(f) = stmt else { continue };
        out.extend(automodel_calls_in(&f.body));
    }
    out
}

/// `AutoModel*.from_config(<config>.<attr>)` in a function body: the call
/// and `<attr>`.
pub fn automodel_calls_in(body: &[Stmt]) -> Vec<(&ExprCall, String)> {
    let mut out = Vec::new();
    for expr in walk::expressions(body, Scope::Own) {
        let Expr::Call(c) = expr else { continue };
        let Expr::Attribute(a) = &*c.func else {
            continue;
        };
        if a.attr.id.as_str() != "from_config" && a.attr.id.as_str() != "_from_config" {
            continue;
        }
        if !matches!(&*a.value, Expr::Name(n) if n.id.as_str().starts_with("AutoModel")) {
            continue;
        }
        let arg = c.arguments.args.first().or_else(|| {
            c.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == "config"))
                .map(|k| &k.value)
        });
        if let Some(Expr::Attribute(sub)) = arg {
            out.push((c, sub.attr.id.to_string()));
        }
    }
    out
}

/// The configuration class `attr` (`vision_config`) names in a composite
/// configuration's `sub_configs = {"vision_config": X, ...}`.
pub fn sub_config_class(configuration: &ParsedFile, attr: &str) -> Option<String> {
    for stmt in configuration.body() {
        let Stmt::ClassDef(c) = stmt else { continue };
        for s in &c.body {
            let Some((target, value)) = facts::one_target_assignment(s) else { continue };
            if !matches!(target, Expr::Name(n) if n.id.as_str() == "sub_configs") {
                continue;
            }
            let Expr::Dict(d) = value else { continue };
            for item in &d.items {
                if let (Some(Expr::StringLiteral(k)), Expr::Name(v)) = (&item.key, &item.value)
                    && k.value.to_str() == attr
                {
                    return Some(v.id.to_string());
                }
            }
        }
    }
    None
}

/// The class a generated module declares for a configuration class
/// (`config: X` or `config_class = X` in its body), preferring a `…Model`.
pub fn model_class_for<'a>(body: &'a [Stmt], config_class: &str) -> Option<&'a StmtClassDef> {
    let declares = |c: &StmtClassDef| model_class_declares(c, config_class);
    let candidates: Vec<&StmtClassDef> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::ClassDef(c) if declares(c) => Some(c),
            _ => None,
        })
        .collect();
    candidates
        .iter()
        .find(|c| c.name.id.as_str().ends_with("Model") && !c.name.id.as_str().contains("PreTrained"))
        .or(candidates.first())
        .copied()
}

/// The class `AutoModel*.from_config` builds for `config_class` when the
/// generated module has it: for `AutoModel`, [`model_class_for`]; for
/// `AutoModelFor<Head>` (`AutoModelForCausalLM`), the declaring class named
/// `…For<Head>` (none: `None`, the head is not in the module).
pub fn model_class_for_call<'a>(body: &'a [Stmt], config_class: &str, call: &ExprCall) -> Option<&'a StmtClassDef> {
    let auto = match &*call.func {
        Expr::Attribute(a) => match &*a.value {
            Expr::Name(n) => n.id.as_str(),
            _ => return None,
        },
        _ => return None,
    };
    let Some(head) = auto.strip_prefix("AutoModel").filter(|h| !h.is_empty()) else {
        return model_class_for(body, config_class);
    };
    body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.id.as_str().ends_with(head) && model_class_declares(c, config_class) => Some(c),
        _ => None,
    })
}

/// Whether a class body declares `config_class` (`config: X`, `config_class = X`).
fn model_class_declares(c: &StmtClassDef, config_class: &str) -> bool {
    c.body.iter().any(|s| match s {
        Stmt::AnnAssign(a) => {
            matches!(&*a.target, Expr::Name(n) if n.id.as_str() == "config")
                && matches!(&*a.annotation, Expr::Name(n) if n.id.as_str() == config_class)
        }
        Stmt::Assign(a) => {
            a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == "config_class"))
                && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == config_class)
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pyfacts;
    use crate::pyfacts::parsed as parse;

    #[test]
    fn calls_sub_configs_and_model_classes() {
        let cfg = parse(
            "class VisCfg(PreTrainedConfig):\n    pass\nclass TxtCfg(PreTrainedConfig):\n    pass\n\
class Cfg(PreTrainedConfig):\n    sub_configs = {\"vision_config\": VisCfg, \"text_config\": TxtCfg}\n",
        );
        assert_eq!(sub_config_class(&cfg, "vision_config").as_deref(), Some("VisCfg"));
        assert_eq!(sub_config_class(&cfg, "audio_config"), None);
        let module = parse(
            "class PreTrained(PreTrainedModel):\n    config: Cfg\n\
class VisModel(PreTrained):\n    config: VisCfg\n    def forward(self):\n        return helper(self.blocks)\n\
def helper(x):\n    return Block(x)\n\
class Block(nn.Module):\n    pass\n\
class Composite(PreTrained):\n    def __init__(self, config):\n        self.visual = AutoModel.from_config(config.vision_config)\n        self.lm = AutoModelForCausalLM.from_config(config=config.text_config)\n        self.x = Other.from_config(config.y)\n",
        );
        let holder = pyfacts::class(module.body(), "Composite").unwrap();
        let attrs: Vec<String> = automodel_calls(holder).into_iter().map(|(_, a)| a).collect();
        assert_eq!(attrs, ["vision_config", "text_config"]);
        assert_eq!(model_class_for(module.body(), "VisCfg").unwrap().name.id.as_str(), "VisModel");
    }
    #[test]
    fn an_automodel_for_a_head_builds_that_head() {
        let module = parse(
            "class TxtModel(P):\n    config: TxtCfg\nclass TxtForCausalLM(P):\n    config: TxtCfg\n\
class C(P):\n    def __init__(self, config):\n        self.a = AutoModel.from_config(config.text_config)\n        self.b = AutoModelForCausalLM.from_config(config.text_config)\n        self.c = AutoModelForImageClassification.from_config(config.text_config)\n",
        );
        let holder = pyfacts::class(module.body(), "C").unwrap();
        let built: Vec<Option<String>> = automodel_calls(holder)
            .into_iter()
            .map(|(call, _)| model_class_for_call(module.body(), "TxtCfg", call).map(|c| c.name.id.to_string()))
            .collect();
        assert_eq!(built, [Some("TxtModel".into()), Some("TxtForCausalLM".into()), None]);
    }
}
