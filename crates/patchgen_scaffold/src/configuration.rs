//! A model's `configuration_<m>.py`, read statically: per config class its
//! `model_type`, its field defaults (annotated class attributes of the
//! v5 dataclass style, `__init__` parameter defaults of the older style,
//! `kwargs.setdefault(...)` in any method) and its `sub_configs`. Only
//! literal defaults are kept; nothing is executed.

use ruff_python_ast::{Expr, Number, Stmt, UnaryOp};
use ruff_text_size::Ranged;
use serde_json::Value;

use patchgen_python::pysource::ParsedFile;

/// A default and the 1-based line it is written on.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub value: Value,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub struct ConfigClass {
    pub name: String,
    pub model_type: Option<String>,
    /// Class attributes and `__init__` defaults, in order.
    pub fields: Vec<Field>,
    /// `kwargs.setdefault("k", v)`: a default the class applies.
    pub setdefaults: Vec<Field>,
    /// `kwargs.pop("k", v)`: settings the class consumes (layer-pattern hints).
    pub pops: Vec<Field>,
    /// `sub_configs = {"text_config": TextConfig, ...}`.
    pub sub_configs: Vec<(String, String)>,
}

impl ConfigClass {
    /// A default by name (fields first, then setdefaults, then pops).
    pub fn get(&self, name: &str) -> Option<&Field> {
        self.fields.iter().chain(self.setdefaults.iter()).chain(self.pops.iter()).find(|f| f.name == name)
    }
}

pub struct ConfigurationModule {
    pub file: ParsedFile,
    pub classes: Vec<ConfigClass>,
}

/// A literal expression as JSON.
pub fn literal(expr: &Expr) -> Option<Value> {
    Some(match expr {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => Value::from(i.as_i64()?),
            Number::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
            Number::Complex { .. } => return None,
        },
        Expr::StringLiteral(s) => Value::String(s.value.to_str().to_string()),
        Expr::BooleanLiteral(b) => Value::Bool(b.value),
        Expr::NoneLiteral(_) => Value::Null,
        Expr::List(l) => Value::Array(l.elts.iter().map(literal).collect::<Option<_>>()?),
        Expr::Tuple(t) => Value::Array(t.elts.iter().map(literal).collect::<Option<_>>()?),
        Expr::Dict(d) => {
            let mut map = serde_json::Map::new();
            for item in &d.items {
                let key = item.key.as_ref()?.as_string_literal_expr()?.value.to_str().to_string();
                map.insert(key, literal(&item.value)?);
            }
            Value::Object(map)
        }
        Expr::UnaryOp(u) if u.op == UnaryOp::USub => match literal(&u.operand)? {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::from(-i)
                } else {
                    serde_json::Number::from_f64(-n.as_f64()?).map(Value::Number)?
                }
            }
            _ => return None,
        },
        _ => return None,
    })
}

/// `kwargs.<method>("k", literal)` calls anywhere under `stmts`.
fn kwargs_calls(stmts: &[Stmt], method: &str, file: &ParsedFile, out: &mut Vec<Field>) {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V<'a> {
        method: &'a str,
        file: &'a ParsedFile,
        out: &'a mut Vec<Field>,
    }
    impl<'a> Visitor<'a> for V<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(call) = expr
                && let Expr::Attribute(attr) = &*call.func
                && attr.attr.id.as_str() == self.method
                && matches!(&*attr.value, Expr::Name(n) if n.id.as_str() == "kwargs")
                && let [key, value] = &call.arguments.args[..]
                && let Some(key) = key.as_string_literal_expr()
                && let Some(value) = literal(value)
            {
                let name = key.value.to_str().to_string();
                if !self.out.iter().any(|f| f.name == name) {
                    self.out.push(Field { name, value, line: self.file.line_of(call.start()) });
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V { method, file, out };
    for s in stmts {
        v.visit_stmt(s);
    }
}

/// A configuration module that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: syntax error: {message}", path.display())]
pub struct SyntaxError {
    pub path: std::path::PathBuf,
    pub line: usize,
    pub message: String,
}

impl ConfigurationModule {
    pub fn parse(path: std::path::PathBuf, text: &str) -> Result<ConfigurationModule, SyntaxError> {
        let file = ParsedFile::parse(path.clone(), text).map_err(|e| SyntaxError {
            path,
            line: e.line,
            message: e.message,
        })?;
        let mut classes = Vec::new();
        for stmt in file.body() {
            let Stmt::ClassDef(c) = stmt else { continue };
            let mut class = ConfigClass { name: c.name.id.to_string(), ..Default::default() };
            for s in &c.body {
                match s {
                    Stmt::AnnAssign(a) => {
                        let (Expr::Name(n), Some(v)) = (&*a.target, a.value.as_deref()) else {
                            continue;
                        };
                        if let Some(value) = literal(v) {
                            class.fields.push(Field { name: n.id.to_string(), value, line: file.line_of(s.start()) });
                        }
                    }
                    Stmt::Assign(a) => {
                        let [Expr::Name(n)] = &a.targets[..] else {
                            continue;
                        };
                        match n.id.as_str() {
                            "model_type" => {
                                class.model_type =
                                    a.value.as_string_literal_expr().map(|s| s.value.to_str().to_string())
                            }
                            "sub_configs" => {
                                if let Expr::Dict(d) = &*a.value {
                                    for item in &d.items {
                                        let Some(k) = item.key.as_ref().and_then(|k| k.as_string_literal_expr()) else {
                                            continue;
                                        };
                                        let class_name = match &item.value {
                                            Expr::Name(n) => n.id.to_string(),
                                            Expr::Attribute(a) => a.attr.id.to_string(),
                                            _ => continue,
                                        };
                                        class.sub_configs.push((k.value.to_str().to_string(), class_name));
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    Stmt::FunctionDef(f) if f.name.id.as_str() == "__init__" => {
                        let params = f.parameters.args.iter().chain(f.parameters.kwonlyargs.iter());
                        for p in params {
                            let Some(d) = p.default.as_deref() else {
                                continue;
                            };
                            let name = p.parameter.name.id.to_string();
                            if let Some(value) = literal(d)
                                && !class.fields.iter().any(|x| x.name == name)
                            {
                                class.fields.push(Field { name, value, line: file.line_of(p.start()) });
                            }
                        }
                    }
                    _ => {}
                }
            }
            kwargs_calls(&c.body, "setdefault", &file, &mut class.setdefaults);
            kwargs_calls(&c.body, "pop", &file, &mut class.pops);
            classes.push(class);
        }
        Ok(ConfigurationModule { file, classes })
    }

    pub fn class(&self, name: &str) -> Option<&ConfigClass> {
        self.classes.iter().find(|c| c.name == name)
    }

    /// The model's top-level config class: `<P>Config`, else the class
    /// whose `model_type` is the module's name.
    pub fn main(&self, prefix: &str, hf_name: &str) -> Option<&ConfigClass> {
        self.class(&format!("{prefix}Config"))
            .or_else(|| self.classes.iter().find(|c| c.model_type.as_deref() == Some(hf_name)))
            .or_else(|| self.classes.iter().rev().find(|c| c.model_type.is_some()))
    }

    /// Partial rotary: a `partial_rotary_factor`/`rotary_pct` default
    /// below 1, or a `mrope_interleaved` default of True; the evidence. (A
    /// configuration that merely accepts `mrope_interleaved` from checkpoints,
    /// as Qwen3-VL's does, rotates the full head: VeOmni keeps the kernel.)
    pub fn partial_rotary(&self) -> Option<String> {
        for c in &self.classes {
            for name in ["partial_rotary_factor", "rotary_pct"] {
                if let Some(f) = c.get(name)
                    && f.value.as_f64().is_some_and(|v| v < 1.0)
                {
                    return Some(format!(
                        "{}.{name} defaults to {} ({}:{})",
                        c.name,
                        f.value,
                        self.file.path.display(),
                        f.line
                    ));
                }
            }
            if let Some(f) = c.get("mrope_interleaved").filter(|f| f.value == Value::Bool(true)) {
                return Some(format!(
                    "{}.mrope_interleaved defaults to True ({}:{})",
                    c.name,
                    self.file.path.display(),
                    f.line
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_setdefaults_and_sub_configs() {
        let src = "class TextConfig(PreTrainedConfig):\n    model_type = \"t_text\"\n    hidden_size: int = 64\n    rms_norm_eps: float = 1e-6\n    rope: dict | None = None\n    def __post_init__(self, **kwargs):\n        kwargs.setdefault(\"partial_rotary_factor\", 0.25)\n        n = kwargs.pop(\"full_attention_interval\", 4)\n\nclass OldConfig(PretrainedConfig):\n    model_type = \"old\"\n    sub_configs = {\"text_config\": TextConfig}\n    def __init__(self, vocab_size=100, layers=(1, -2), act=\"silu\", **kwargs):\n        pass\n";
        let m = ConfigurationModule::parse("c.py".into(), src).unwrap();
        let t = m.class("TextConfig").unwrap();
        assert_eq!(t.model_type.as_deref(), Some("t_text"));
        assert_eq!(t.get("hidden_size").unwrap().value, Value::from(64));
        assert_eq!(t.get("rms_norm_eps").unwrap().value.as_f64(), Some(1e-6));
        assert_eq!(t.get("rope").unwrap().value, Value::Null);
        assert_eq!(t.get("partial_rotary_factor").unwrap().line, 7);
        assert_eq!(t.get("full_attention_interval").unwrap().value, Value::from(4));
        let o = m.class("OldConfig").unwrap();
        assert_eq!(o.sub_configs, [("text_config".to_string(), "TextConfig".to_string())]);
        assert_eq!(o.get("layers").unwrap().value, serde_json::json!([1, -2]));
        assert!(m.partial_rotary().unwrap().contains("partial_rotary_factor defaults to 0.25"));
        assert_eq!(m.main("Old", "old").unwrap().name, "OldConfig");
    }
}
