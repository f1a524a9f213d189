//! The model package's `__init__.py` that `patchgen new` writes, in the
//! protocol's patterns (`../shared/protocol-research.md` §3): A (one
//! backend), B (a checkpoint converter registered on every class: its
//! factory as `_create_checkpoint_tensor_converter`, its index-key mapping
//! as `_convert_fqn_to_index_mapping`), C (NPU and GPU modules chosen by
//! `IS_NPU_AVAILABLE`; B and C combine). Class list from `__all__`,
//! registry keys from the configuration's `model_type`s, most specific
//! architecture test first, a `None` architecture guard.

use std::fmt::Write;

use super::render::py_str;

/// One registry entry of `__init__.py`.
pub struct Registration<'a> {
    pub key: &'a str,
    pub classes: &'a [String],
    pub default: &'a str,
    /// The class name prefix (architecture tests use what follows it).
    pub prefix: &'a str,
}

/// The converter functions pattern B registers on every class.
pub struct ConverterHook<'a> {
    /// The module next to `__init__.py` (`checkpoint_tensor_converter`).
    pub module: &'a str,
    /// `create_<m>_checkpoint_tensor_converter`.
    pub create: &'a str,
    /// `convert_<m>_fqn_to_index_mapping`.
    pub fqn: &'a str,
    /// Classes that are the base model themselves (no `self.<base_model_prefix>`):
    /// their index mapping is called with `target_model_prefix=""` (a converter
    /// that handles the base-model prefix, as VeOmni's deepseek_v4 package does).
    pub unprefixed: &'a [String],
}

/// `__init__.py`: pattern A (one backend), C (`npu_import` set: NPU and
/// GPU generated modules chosen by `IS_NPU_AVAILABLE`), with `converter`
/// pattern B (the converter factory and the index-key mapping assigned to
/// every imported class, as VeOmni's qwen3_moe/deepseek_v3 packages do).
pub fn init_py(
    licence: &str,
    registry_import: &str,
    npu_import: Option<&str>,
    hf_name: &str,
    backends: &[String],
    regs: &[Registration<'_>],
    converter: Option<&ConverterHook<'_>>,
) -> String {
    let mut out = String::new();
    if !licence.is_empty() {
        out.push_str(licence.trim_end());
        out.push_str("\n\n");
    }
    if converter.is_some_and(|c| !c.unprefixed.is_empty()) {
        let _ = writeln!(out, "from functools import partial\n");
    }
    if let Some(n) = npu_import {
        let _ = writeln!(out, "{n}");
    }
    let _ = writeln!(out, "{registry_import}\n");
    for reg in regs {
        let fname = format!("register_{}_modeling", reg.key.replace(['-', '.'], "_"));
        let _ = writeln!(out, "\n@MODELING_REGISTRY.register({})", py_str(reg.key));
        let _ = writeln!(out, "def {fname}(architecture: str):");
        let _ = writeln!(out, "    # `get_model_class` passes `config.architectures[0]`, which can be None.");
        let _ = writeln!(out, "    architecture = architecture or {}", py_str(reg.default));
        if let Some(c) = converter {
            let _ = writeln!(out, "    from .{} import (\n        {},\n        {},\n    )", c.module, c.fqn, c.create);
        }
        let import = |backend: &str, indent: &str, out: &mut String| {
            let _ = writeln!(out, "{indent}from .generated.patched_modeling_{hf_name}_{backend} import (");
            for c in reg.classes {
                let _ = writeln!(out, "{indent}    {c},");
            }
            let _ = writeln!(out, "{indent})");
        };
        if npu_import.is_some() && backends.iter().any(|b| b == "npu") && backends.iter().any(|b| b == "gpu") {
            let _ = writeln!(out, "    if IS_NPU_AVAILABLE:");
            import("npu", "        ", &mut out);
            let _ = writeln!(out, "    else:");
            import("gpu", "        ", &mut out);
        } else {
            import(&backends[0], "    ", &mut out);
        }
        if let Some(c) = converter {
            let _ = writeln!(out, "\n    for model_cls in (");
            for class in reg.classes {
                let _ = writeln!(out, "        {class},");
            }
            let _ = writeln!(out, "    ):");
            let _ = writeln!(out, "        model_cls._create_checkpoint_tensor_converter = staticmethod({})", c.create);
            let _ = writeln!(out, "        model_cls._convert_fqn_to_index_mapping = staticmethod({})", c.fqn);
            for class in reg.classes.iter().filter(|k| c.unprefixed.contains(k)) {
                let _ = writeln!(
                    out,
                    "    {class}._convert_fqn_to_index_mapping = staticmethod(partial({}, target_model_prefix=\"\"))",
                    c.fqn
                );
            }
        }
        out.push('\n');
        let mut tests: Vec<(&str, &String)> =
            reg.classes.iter().map(|c| (c.strip_prefix(reg.prefix).unwrap_or(c), c)).collect();
        // Most specific first: a longer architecture test can contain a shorter one.
        tests.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (i, (stem, class)) in tests.iter().enumerate() {
            let kw = if i == 0 { "if" } else { "elif" };
            let _ = writeln!(out, "    {kw} {} in architecture:\n        return {class}", py_str(stem));
        }
        let _ = writeln!(out, "    else:\n        return {}\n", reg.default);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_tests_most_specific_first_and_guards_none() {
        let classes: Vec<String> = ["ToyModel", "ToyForCausalLM", "ToyForSequenceClassification", "ToyTextModel"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let text = init_py(
            "",
            "from ...loader import MODELING_REGISTRY",
            None,
            "toy",
            &["gpu".to_string()],
            &[Registration { key: "toy", classes: &classes, default: "ToyForCausalLM", prefix: "Toy" }],
            None,
        );
        let pos = |s: &str| text.find(s).unwrap();
        assert!(pos("\"ForSequenceClassification\" in") < pos("\"ForCausalLM\" in"));
        assert!(pos("\"TextModel\" in") < pos("\"Model\" in"));
        assert!(text.contains("architecture = architecture or \"ToyForCausalLM\""));
        assert!(text.contains("from .generated.patched_modeling_toy_gpu import ("));
    }

    #[test]
    fn pattern_b_registers_the_converter_on_every_class() {
        let classes: Vec<String> = ["ToyModel", "ToyForCausalLM"].iter().map(|s| s.to_string()).collect();
        let hook = ConverterHook {
            module: "checkpoint_tensor_converter",
            create: "create_toy_checkpoint_tensor_converter",
            fqn: "convert_toy_fqn_to_index_mapping",
            unprefixed: &[],
        };
        let text = init_py(
            "",
            "from ...loader import MODELING_REGISTRY",
            None,
            "toy",
            &["gpu".to_string()],
            &[Registration { key: "toy", classes: &classes, default: "ToyForCausalLM", prefix: "Toy" }],
            Some(&hook),
        );
        assert!(text.contains("    from .checkpoint_tensor_converter import (\n        convert_toy_fqn_to_index_mapping,\n        create_toy_checkpoint_tensor_converter,\n    )\n"));
        assert!(text.contains("    for model_cls in (\n        ToyModel,\n        ToyForCausalLM,\n    ):\n        model_cls._create_checkpoint_tensor_converter = staticmethod(create_toy_checkpoint_tensor_converter)\n        model_cls._convert_fqn_to_index_mapping = staticmethod(convert_toy_fqn_to_index_mapping)\n"));
        // What lint reads as a registered converter (PG401).
        let f = patchgen_python::pysource::ParsedFile::parse(std::path::PathBuf::from("__init__.py"), &text).unwrap();
        assert_eq!(patchgen_lint::package::converter_factories(&f).len(), 1);
    }
}
