//! What `patchgen new` needs to know about a model's upstream modeling
//! module, read statically: its class prefix (`<P>PreTrainedModel`),
//! `__all__`, top-level classes and functions, the category evidence
//! (vision/audio towers, `ForConditionalGeneration`, experts classes,
//! thinker/talker) and the facts behind the protocol's exceptions (an MLP
//! whose `__init__` takes `intermediate_size`, a `1 + weight` RMSNorm).

use std::sync::Arc;

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use serde::Serialize;

use patchgen_core::survey::modules::{self, Version};
use patchgen_core::survey::signature::{FunctionInfo, Signature};
use patchgen_python::pysource::ParsedFile;

/// The protocol's model categories (step 1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Text,
    Moe,
    Vlm,
    VlmMoe,
    Omni,
    OmniMoe,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Text => "text",
            Category::Moe => "moe",
            Category::Vlm => "vlm",
            Category::VlmMoe => "vlm-moe",
            Category::Omni => "omni",
            Category::OmniMoe => "omni-moe",
        }
    }

    pub fn is_moe(self) -> bool {
        matches!(self, Category::Moe | Category::VlmMoe | Category::OmniMoe)
    }

    pub fn is_multimodal(self) -> bool {
        !matches!(self, Category::Text | Category::Moe)
    }

    /// The protocol's reference models, in order of preference (the first
    /// the project has is the template).
    pub fn templates(self) -> &'static [&'static str] {
        // The protocol's choice first; then the closest the project may
        // have instead (a dense sibling of a MoE category).
        match self {
            Category::Text => &["qwen3", "llama", "qwen2"],
            Category::Moe => &["qwen3_moe", "qwen3", "llama", "qwen2"],
            Category::Vlm => &["qwen3_vl", "qwen2_5_vl", "qwen2_vl"],
            Category::VlmMoe => &["qwen3_vl_moe", "qwen3_vl", "qwen2_5_vl", "qwen2_vl"],
            Category::Omni => &["qwen2_5_omni", "qwen3_omni_moe"],
            Category::OmniMoe => &["qwen3_omni_moe", "qwen2_5_omni"],
        }
    }
}

/// A model's upstream modeling module, parsed.
pub struct ModelFacts {
    pub hf_name: String,
    /// `transformers.models.<m>.modeling_<m>`.
    pub module: String,
    pub file: Arc<ParsedFile>,
    /// `<P>` of `<P>PreTrainedModel`.
    pub prefix: String,
    pub all: Vec<String>,
    pub classes: Vec<String>,
    pub functions: Vec<String>,
}

/// `__all__ = [...]` of a module, as strings.
pub fn dunder_all(file: &ParsedFile) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in file.body() {
        let Stmt::Assign(a) = stmt else { continue };
        if !a.targets.iter().any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == "__all__")) {
            continue;
        }
        let elts = match &*a.value {
            Expr::List(l) => &l.elts,
            Expr::Tuple(t) => &t.elts,
            _ => continue,
        };
        out = elts.iter().filter_map(|e| e.as_string_literal_expr().map(|s| s.value.to_str().to_string())).collect();
    }
    out
}

/// Why a model's facts cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsError {
    #[error("upstream module `{module}` not found in {}", location.display())]
    NotFound { module: String, location: std::path::PathBuf },
    /// The module exists but cannot be read or parsed (the message names the file and line).
    #[error("{0}")]
    Broken(String),
    #[error("{}: no `<Prefix>PreTrainedModel` class: not a model module", path.display())]
    NotAModel { path: std::path::PathBuf },
}

impl ModelFacts {
    /// Read `transformers.models.<m>.modeling_<m>` from `version`.
    pub fn read(version: &Version, package: &str, hf_name: &str) -> Result<ModelFacts, FactsError> {
        let module = format!("{package}.models.{hf_name}.modeling_{hf_name}");
        let file = match version.module(&module) {
            Ok(f) => f,
            Err(modules::ModuleError::NotFound) => {
                return Err(FactsError::NotFound { module, location: version.upstream.location.clone() });
            }
            Err(modules::ModuleError::Broken(m)) => return Err(FactsError::Broken(m)),
        };
        let mut classes = Vec::new();
        let mut functions = Vec::new();
        for stmt in file.body() {
            match stmt {
                Stmt::ClassDef(c) => classes.push(c.name.id.to_string()),
                Stmt::FunctionDef(f) => functions.push(f.name.id.to_string()),
                _ => {}
            }
        }
        let all = dunder_all(&file);
        // The shortest: towers have their own (`<P>VisionPreTrainedModel`).
        let prefix = classes
            .iter()
            .chain(all.iter())
            .filter_map(|c| c.strip_suffix("PreTrainedModel").filter(|p| !p.is_empty()))
            .min_by_key(|p| p.len())
            .map(str::to_string)
            .ok_or_else(|| FactsError::NotAModel { path: file.path.clone() })?;
        Ok(ModelFacts { hf_name: hf_name.to_string(), module, file, prefix, all, classes, functions })
    }

    pub fn has_class(&self, name: &str) -> bool {
        self.classes.iter().any(|c| c == name)
    }

    pub fn has_function(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }

    /// Class names with the model prefix removed.
    fn stems(&self) -> impl Iterator<Item = (&str, &str)> {
        self.classes.iter().map(|c| (c.as_str(), c.strip_prefix(self.prefix.as_str()).unwrap_or(c)))
    }

    /// The category and the evidence for it.
    pub fn category(&self) -> (Category, Vec<String>) {
        let pick = |f: &dyn Fn(&str) -> bool| -> Vec<String> {
            self.stems().filter(|(_, s)| f(s)).map(|(c, _)| c.to_string()).collect()
        };
        let vision =
            pick(&|s| s.contains("Vision") || s.contains("Visual") || s.contains("Image") || s.contains("MultiModal"));
        let audio = pick(&|s| s.contains("Audio"));
        let experts = pick(&|s| {
            s.ends_with("Experts")
                || s.contains("SparseMoe")
                || s.ends_with("MoE")
                || s.ends_with("Moe")
                || s.contains("MoeBlock")
        });
        let omni = pick(&|s| s.contains("Thinker") || s.contains("Talker"));
        let cond_gen: Vec<String> =
            self.all.iter().filter(|c| c.ends_with("ForConditionalGeneration")).cloned().collect();
        let mut evidence = Vec::new();
        let mut note = |what: &str, names: &[String]| {
            if !names.is_empty() {
                let shown: Vec<&str> = names.iter().take(4).map(String::as_str).collect();
                let more = if names.len() > 4 { format!(" (+{})", names.len() - 4) } else { String::new() };
                evidence.push(format!("{what}: {}{more}", shown.join(", ")));
            }
        };
        note("vision tower", &vision);
        note("audio tower", &audio);
        note("experts", &experts);
        note("thinker/talker", &omni);
        note("ForConditionalGeneration in __all__", &cond_gen);
        let is_omni = !omni.is_empty() || (!audio.is_empty() && !vision.is_empty());
        let is_vlm = !vision.is_empty() && !cond_gen.is_empty();
        let moe = !experts.is_empty();
        let category = match (is_omni, is_vlm, moe) {
            (true, _, true) => Category::OmniMoe,
            (true, _, false) => Category::Omni,
            (false, true, true) => Category::VlmMoe,
            (false, true, false) => Category::Vlm,
            (false, false, true) => Category::Moe,
            (false, false, false) => Category::Text,
        };
        if evidence.is_empty() {
            evidence.push("no vision/audio tower, experts or thinker/talker classes".into());
        }
        (category, evidence)
    }

    /// A method of a class of this module, found along its bases (the
    /// function and the class that defines it).
    pub fn method(&self, version: &Version, class: &str, method: &str) -> Option<(String, FunctionInfo)> {
        let c = version.class(&self.module, class).filter(|c| c.module == self.module)?;
        let lineage = version.lineage(&c);
        let (owner, f) = lineage.method(method)?;
        Some((owner.name().to_string(), FunctionInfo::of(f, &owner.file)))
    }

    /// The signature of what a patch target names: a function, a method, or
    /// a class's `__init__`.
    pub fn target_signature(&self, version: &Version, target: &str, is_class: bool) -> Option<Signature> {
        if is_class {
            return self.method(version, target, "__init__").map(|(_, f)| f.signature);
        }
        match target.split_once('.') {
            Some((class, method)) => self.method(version, class, method).map(|(_, f)| f.signature),
            None => modules::function(&self.file, target).map(|f| FunctionInfo::of(f, &self.file).signature),
        }
    }

    /// The source text of a class's own method (for the norm check).
    pub fn method_text(&self, version: &Version, class: &str, method: &str) -> Option<String> {
        let c = version.class(&self.module, class).filter(|c| c.module == self.module)?;
        let lineage = version.lineage(&c);
        let (owner, f) = lineage.method(method)?;
        Some(owner.file.text[f.range()].to_string())
    }

    /// `1 + weight` RMSNorm (Gemma, Qwen3-Next): the forward scales by
    /// `1 + self.weight` (or `1.0 + …`, `self.weight + 1`).
    pub fn norm_is_one_plus_weight(&self, version: &Version, class: &str) -> Option<usize> {
        let c = version.class(&self.module, class).filter(|c| c.module == self.module)?;
        let lineage = version.lineage(&c);
        let (owner, f) = lineage.method("forward")?;
        let text = &owner.file.text[f.range()];
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let hit = [
            "(1+self.weight",
            "(1.0+self.weight",
            "self.weight+1)",
            "self.weight+1.0)",
            "*(1+self.weight",
            "1.0+self.weight.float()",
            "1+self.weight.float()",
        ]
        .iter()
        .any(|p| squeezed.contains(p));
        hit.then(|| owner.file.line_of(f.start()))
    }

    /// Whether the module's class `class` defines `method` in its own body.
    pub fn defines_method(&self, class: &str, method: &str) -> bool {
        self.file.body().iter().any(|s| match s {
            Stmt::ClassDef(c) if c.name.id.as_str() == class => {
                c.body.iter().any(|m| matches!(m, Stmt::FunctionDef(f) if f.name.id.as_str() == method))
            }
            _ => false,
        })
    }

    /// The line of a class's `__init__` when it takes `intermediate_size`.
    pub fn init_takes_intermediate_size(&self, version: &Version, class: &str) -> Option<usize> {
        let (_, f) = self.method(version, class, "__init__")?;
        f.signature.has("intermediate_size").then_some(f.line)
    }
}
