//! What a function or class promises its callers, read from the AST:
//! parameter lists (names, kinds, defaults as source text), decorators (as
//! dotted names and as text) and base classes. Owned data, so two versions
//! can be compared after their files are dropped.

use ruff_python_ast::{Decorator, Expr, Parameters, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use crate::semantic::facts::dotted;

/// How a parameter can be passed (Python's `inspect.Parameter.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    PositionalOnly,
    PositionalOrKeyword,
    VarPositional,
    KeywordOnly,
    VarKeyword,
}

impl ParamKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::PositionalOnly => "positional_only",
            ParamKind::PositionalOrKeyword => "positional_or_keyword",
            ParamKind::VarPositional => "var_positional",
            ParamKind::KeywordOnly => "keyword_only",
            ParamKind::VarKeyword => "var_keyword",
        }
    }

    /// Passed by position (so its place in the list is part of the contract).
    pub fn is_positional(self) -> bool {
        matches!(self, ParamKind::PositionalOnly | ParamKind::PositionalOrKeyword)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    /// The default's source text, on one line.
    pub default: Option<String>,
}

/// A parameter list in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Signature {
    pub params: Vec<Param>,
}

impl Signature {
    pub fn of(parameters: &Parameters, text: &str) -> Signature {
        let with_default = |p: &ruff_python_ast::ParameterWithDefault, kind| Param {
            name: p.parameter.name.id.to_string(),
            kind,
            default: p.default.as_deref().map(|d| one_line(&text[d.range()])),
        };
        let variadic =
            |p: &ruff_python_ast::Parameter, kind| Param { name: p.name.id.to_string(), kind, default: None };
        let mut params: Vec<Param> = Vec::new();
        params.extend(parameters.posonlyargs.iter().map(|p| with_default(p, ParamKind::PositionalOnly)));
        params.extend(parameters.args.iter().map(|p| with_default(p, ParamKind::PositionalOrKeyword)));
        params.extend(parameters.vararg.as_deref().map(|p| variadic(p, ParamKind::VarPositional)));
        params.extend(parameters.kwonlyargs.iter().map(|p| with_default(p, ParamKind::KeywordOnly)));
        params.extend(parameters.kwarg.as_deref().map(|p| variadic(p, ParamKind::VarKeyword)));
        Signature { params }
    }

    pub fn get(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// `(self, x, /, y=1, *args, z, **kwargs)`: Python's own notation,
/// annotations left out so long `forward` signatures stay readable.
impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        let mut star_done = false;
        for (i, p) in self.params.iter().enumerate() {
            match p.kind {
                ParamKind::VarPositional => {
                    star_done = true;
                    parts.push(format!("*{}", p.name));
                }
                ParamKind::VarKeyword => parts.push(format!("**{}", p.name)),
                ParamKind::KeywordOnly if !star_done => {
                    star_done = true;
                    parts.push("*".into());
                    parts.push(render_param(p));
                }
                _ => parts.push(render_param(p)),
            }
            let next_is_posonly = self.params.get(i + 1).is_some_and(|n| n.kind == ParamKind::PositionalOnly);
            if p.kind == ParamKind::PositionalOnly && !next_is_posonly {
                parts.push("/".into());
            }
        }
        write!(f, "({})", parts.join(", "))
    }
}

fn render_param(p: &Param) -> String {
    match &p.default {
        Some(d) => format!("{}={d}", p.name),
        None => p.name.clone(),
    }
}

/// Source text with line breaks and indentation collapsed to single spaces
/// (a trailing comma before a closing bracket on its own line dropped, as
/// formatters add and remove it freely).
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    let mut newline = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            newline |= c == '\n';
            continue;
        }
        let closer = matches!(c, ')' | ']' | '}');
        if closer && newline && out.ends_with(',') {
            out.pop();
        }
        if pending_space && !closer && c != ',' && !out.ends_with(['(', '[', '{']) {
            out.push(' ');
        }
        pending_space = false;
        newline = false;
        out.push(c);
    }
    out
}

/// A decorator: its dotted name (`torch.no_grad`, without call arguments)
/// and its source text (`@torch.no_grad()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecoratorInfo {
    pub name: String,
    pub text: String,
}

pub fn decorators(list: &[Decorator], text: &str) -> Vec<DecoratorInfo> {
    list.iter()
        .map(|d| {
            let callee = decorator_callee(d);
            DecoratorInfo {
                name: dotted(callee).unwrap_or_else(|| one_line(&text[callee.range()])),
                text: format!("@{}", one_line(&text[d.expression.range()])),
            }
        })
        .collect()
}

/// What a decorator names: `a.b` of `@a.b` and of `@a.b(1)`.
pub fn decorator_callee(d: &Decorator) -> &Expr {
    match &d.expression {
        Expr::Call(call) => &call.func,
        other => other,
    }
}

/// The dotted name of a decorator, call arguments dropped (`torch.no_grad`
/// of `@torch.no_grad()`); `None` for other expressions (`@fns[0]`).
pub fn decorator_name(d: &Decorator) -> Option<String> {
    dotted(decorator_callee(d))
}

/// A function or method as a target: where it is and what it promises.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub signature: Signature,
    pub decorators: Vec<DecoratorInfo>,
    /// 1-based line of the `def` (or its first decorator).
    pub line: usize,
}

impl FunctionInfo {
    pub fn of(def: &StmtFunctionDef, file: &super::ParsedFile) -> FunctionInfo {
        FunctionInfo {
            signature: Signature::of(&def.parameters, &file.text),
            decorators: decorators(&def.decorator_list, &file.text),
            line: file.line_of(def.start()),
        }
    }
}

/// A class's base-class list as source text (keywords such as
/// `metaclass=` included).
pub fn bases(class: &StmtClassDef, text: &str) -> Vec<String> {
    let Some(args) = &class.arguments else {
        return Vec::new();
    };
    let mut out: Vec<String> = args.args.iter().map(|a| one_line(&text[a.range()])).collect();
    out.extend(args.keywords.iter().map(|k| one_line(&text[k.range()])));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(src: &str) -> Signature {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let ruff_python_ast::Stmt::FunctionDef(f) = &parsed.syntax().body[0] else { panic!("not a def: {src}") };
        Signature::of(&f.parameters, src)
    }

    #[test]
    fn kinds_and_defaults() {
        let s = sig("def f(a, /, b, c=1, *args, d, e=(\n  1,\n  2,\n), **kw): pass\n");
        let kinds: Vec<_> = s.params.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ParamKind::PositionalOnly,
                ParamKind::PositionalOrKeyword,
                ParamKind::PositionalOrKeyword,
                ParamKind::VarPositional,
                ParamKind::KeywordOnly,
                ParamKind::KeywordOnly,
                ParamKind::VarKeyword
            ]
        );
        assert_eq!(s.get("e").unwrap().default.as_deref(), Some("(1, 2)"));
        assert_eq!(s.to_string(), "(a, /, b, c=1, *args, d, e=(1, 2), **kw)");
    }

    #[test]
    fn bare_star_is_rendered() {
        assert_eq!(sig("def f(self, *, x=None): pass").to_string(), "(self, *, x=None)");
    }

    #[test]
    fn decorator_names_drop_call_arguments() {
        let src = "@a.b(1)\n@c\n@fns[0]\ndef f(): pass\n";
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let ruff_python_ast::Stmt::FunctionDef(f) = &parsed.syntax().body[0] else { panic!() };
        let d = decorators(&f.decorator_list, src);
        assert_eq!(d[0], DecoratorInfo { name: "a.b".into(), text: "@a.b(1)".into() });
        assert_eq!(d[1].name, "c");
        let names: Vec<_> = f.decorator_list.iter().map(decorator_name).collect();
        assert_eq!(names, [Some("a.b".to_string()), Some("c".to_string()), None]);
    }
}
