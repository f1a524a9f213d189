//! The upstream side of a config: its `source_module` (read from the
//! buffer), found on the project's search path as `check` finds it
//! (`patchgen_core::upstream`: `PYTHONPATH` entries, wheels included, the
//! virtualenv, the project), parsed once per server; and what a target
//! string names there: the class, method or function, its signature,
//! decorators, docstring and line. A module read from a wheel is written
//! out once to a read-only copy under the temporary directory, so an
//! editor can open the definition.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ruff_python_ast::{Expr, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::Ranged;

use patchgen_core::upstream::SearchPath;
use patchgen_python::pysource::{ParsedFile, defs, keyword_line, signature};
use patchgen_python::semantic::facts;

/// An upstream module, parsed, and a file an editor can open for it.
pub struct UpstreamFile {
    pub parsed: Arc<ParsedFile>,
    /// Where it was read from (`wheel.whl!member` for a wheel).
    pub origin: PathBuf,
    /// A file holding its text: the origin itself, or the copy of a wheel member.
    pub on_disk: Option<PathBuf>,
}

/// What a name in an upstream module is.
pub struct Found<'f> {
    pub file: &'f UpstreamFile,
    pub kind: Kind<'f>,
}

pub enum Kind<'f> {
    Class(&'f StmtClassDef),
    Function(&'f StmtFunctionDef),
    /// Some other top-level binding (an assignment, an import): its statement.
    Other(&'f Stmt),
}

/// Upstream modules by name, found and parsed once.
pub struct Upstreams {
    search: SearchPath,
    modules: Mutex<HashMap<String, Option<Arc<UpstreamFile>>>>,
    /// Where wheel members are written out.
    copies: PathBuf,
}

impl Upstreams {
    pub fn new(search: SearchPath, copies: PathBuf) -> Upstreams {
        Upstreams { search, modules: Mutex::default(), copies }
    }

    /// The module `name`, or `None` when it is not on the search path (or does not parse).
    pub fn module(&self, name: &str) -> Option<Arc<UpstreamFile>> {
        if let Some(found) = self.modules.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
            return found.clone();
        }
        let found = self.read(name).map(Arc::new);
        self.modules.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), found.clone());
        found
    }

    fn read(&self, name: &str) -> Option<UpstreamFile> {
        let source = self.search.find_module(name).ok()?;
        let parsed = ParsedFile::parse_shared(source.origin.clone(), &source.text).ok()?;
        let on_disk = if source.origin.is_file() {
            Some(source.origin.clone())
        } else {
            self.copy_out(&source.origin, &source.text)
        };
        Some(UpstreamFile { parsed, origin: source.origin, on_disk })
    }

    /// A read-only copy of a wheel member (`archive!member`), kept across
    /// servers while its text is unchanged.
    fn copy_out(&self, origin: &Path, text: &str) -> Option<PathBuf> {
        let origin = origin.to_string_lossy();
        let (archive, member) = origin.split_once('!')?;
        let archive = Path::new(archive).file_name()?.to_string_lossy().into_owned();
        let path = self.copies.join(archive).join(member);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
            return Some(path);
        }
        std::fs::create_dir_all(path.parent()?).ok()?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text).ok()?;
        let mut perms = std::fs::metadata(&tmp).ok()?.permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&tmp, perms).ok()?;
        std::fs::rename(&tmp, &path).ok()?;
        Some(path)
    }
}

impl UpstreamFile {
    /// What `target` (`Class`, `Class.method`, `function`, `name`) names
    /// here; a method missing from its class is looked for in the bases
    /// the module defines.
    pub fn find(&self, target: &str) -> Option<Found<'_>> {
        let body = self.parsed.body();
        let mut parts = target.split('.');
        let first = parts.next()?;
        let rest: Vec<&str> = parts.collect();
        let found = |kind| Some(Found { file: self, kind });
        if rest.is_empty() {
            if let Some((_, c)) = defs::class(body, first) {
                return found(Kind::Class(c));
            }
            if let Some(f) = defs::function(body, first) {
                return found(Kind::Function(f));
            }
            let stmt = body.iter().rev().find(|s| {
                patchgen_python::pysource::names::bound_names(s).contains(&first)
                    && !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_))
            })?;
            return found(Kind::Other(stmt));
        }
        let (_, mut class) = defs::class(body, first)?;
        for (i, name) in rest.iter().enumerate() {
            let last = i + 1 == rest.len();
            if last && let Some(f) = self.method(class, name, 0) {
                return found(Kind::Function(f));
            }
            class = class.body.iter().find_map(|s| match s {
                Stmt::ClassDef(c) if c.name.id.as_str() == *name => Some(c),
                _ => None,
            })?;
        }
        found(Kind::Class(class))
    }

    /// `class.name`, else in the bases this module defines (depth-limited).
    fn method<'a>(&'a self, class: &'a StmtClassDef, name: &str, depth: usize) -> Option<&'a StmtFunctionDef> {
        if let Some(f) = defs::method(class, name) {
            return Some(f);
        }
        if depth > 8 {
            return None;
        }
        let bases = class.arguments.as_ref()?;
        bases.args.iter().find_map(|b| match b {
            Expr::Name(n) => {
                let (_, base) = defs::class(self.parsed.body(), n.id.as_str())?;
                self.method(base, name, depth + 1)
            }
            _ => None,
        })
    }

    /// The top-level classes and functions, and a class's methods when
    /// `prefix` names one (`Qwen3MLP.`): (target, detail, is a class).
    pub fn completions(&self, prefix: &str) -> Vec<(String, String, bool)> {
        let body = self.parsed.body();
        let text = &self.parsed.text;
        if let Some((class, _)) = prefix.rsplit_once('.') {
            let Some(Found { kind: Kind::Class(c), .. }) = self.find(class) else { return Vec::new() };
            return defs::methods(c)
                .map(|f| (format!("{class}.{}", f.name.id), function_header(f, text), false))
                .collect();
        }
        body.iter()
            .filter_map(|s| match s {
                Stmt::ClassDef(c) => Some((c.name.id.to_string(), class_header(c, text), true)),
                Stmt::FunctionDef(f) => Some((f.name.id.to_string(), function_header(f, text), false)),
                _ => None,
            })
            .collect()
    }
}

impl Found<'_> {
    /// The 1-based line of the `def` / `class` keyword (or of the statement).
    pub fn line(&self) -> usize {
        let file = &self.file.parsed;
        match self.kind {
            Kind::Class(c) => keyword_line(file, c.name.start()),
            Kind::Function(f) => keyword_line(file, f.name.start()),
            Kind::Other(s) => file.line_of(s.start()),
        }
    }

    /// The 1-based (line, column) of the defined name.
    pub fn name_position(&self) -> (usize, usize) {
        let file = &self.file.parsed;
        match self.kind {
            Kind::Class(c) => file.line_column(c.name.start()),
            Kind::Function(f) => file.line_column(f.name.start()),
            Kind::Other(s) => file.line_column(s.start()),
        }
    }

    /// Markdown: the decorators and header in a Python block, the
    /// docstring's first lines, and `origin:line`.
    pub fn hover(&self) -> String {
        let text = &self.file.parsed.text;
        let (decorators, header, doc) = match self.kind {
            Kind::Class(c) => (
                signature::decorators(&c.decorator_list, text),
                class_header(c, text),
                facts::docstring(&c.body).map(str::to_string),
            ),
            Kind::Function(f) => (
                signature::decorators(&f.decorator_list, text),
                function_header(f, text),
                facts::docstring(&f.body).map(str::to_string),
            ),
            Kind::Other(s) => (Vec::new(), signature::one_line(&text[s.range()]), None),
        };
        let mut out = String::from("```python\n");
        for d in decorators {
            out.push_str(&d.text);
            out.push('\n');
        }
        out.push_str(&header);
        out.push_str("\n```\n");
        if let Some(doc) = doc {
            let lines: Vec<&str> = doc.trim().lines().map(str::trim).take_while(|l| !l.is_empty()).take(6).collect();
            if !lines.is_empty() {
                out.push('\n');
                out.push_str(&lines.join("\n"));
                out.push('\n');
            }
        }
        out.push_str(&format!("\n`{}:{}`\n", self.file.origin.display(), self.line()));
        out
    }
}

/// `def name(params) -> returns`, on one line.
fn function_header(f: &StmtFunctionDef, text: &str) -> String {
    let params = signature::one_line(&text[f.parameters.range()]);
    let returns =
        f.returns.as_ref().map(|r| format!(" -> {}", signature::one_line(&text[r.range()]))).unwrap_or_default();
    let asynchronous = if f.is_async { "async " } else { "" };
    format!("{asynchronous}def {}{params}{returns}", f.name.id)
}

/// `class Name(bases)`.
fn class_header(c: &StmtClassDef, text: &str) -> String {
    let bases = signature::bases(c, text);
    if bases.is_empty() { format!("class {}", c.name.id) } else { format!("class {}({})", c.name.id, bases.join(", ")) }
}

/// The `source_module="..."` a config buffer names, read lexically (so it
/// is known while the buffer does not parse).
pub fn source_module_of(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find("source_module") {
        let after = rest[i + "source_module".len()..].trim_start();
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            if let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'')
                && let Some(end) = value[1..].find(q)
            {
                return Some(value[1..1 + end].to_string());
            }
        }
        rest = &rest[i + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const UP: &str = "import torch\n\nACT = {}\n\n\nclass Base:\n    def helper(self, x):\n        return x\n\n\n@dataclass\nclass MLP(Base):\n    \"\"\"A multi-layer\n    perceptron.\n\n    More.\"\"\"\n\n    @torch.no_grad()\n    def forward(self, x: int, *, y=(1,\n            2)) -> int:\n        return x\n\n\ndef rotate(q, k):\n    return q\n";

    fn file() -> UpstreamFile {
        let parsed = ParsedFile::parse(PathBuf::from("up.py"), UP).unwrap();
        UpstreamFile { parsed: Arc::new(parsed), origin: PathBuf::from("pkg/up.py"), on_disk: None }
    }

    #[test]
    fn targets_resolve_to_their_definitions() {
        let f = file();
        assert_eq!(f.find("MLP").unwrap().line(), 12);
        assert_eq!(f.find("MLP.forward").unwrap().line(), 19);
        // Inherited from a base defined in the module.
        assert_eq!(f.find("MLP.helper").unwrap().line(), 7);
        assert_eq!(f.find("rotate").unwrap().line(), 24);
        assert_eq!(f.find("ACT").unwrap().line(), 3);
        assert!(f.find("MLP.nothing").is_none());
        assert!(f.find("Nothing").is_none());
    }

    #[test]
    fn hover_shows_decorators_header_docstring_and_place() {
        let f = file();
        let h = f.find("MLP.forward").unwrap().hover();
        assert_eq!(
            h,
            "```python\n@torch.no_grad()\ndef forward(self, x: int, *, y=(1, 2)) -> int\n```\n\n`pkg/up.py:19`\n"
        );
        let h = f.find("MLP").unwrap().hover();
        assert_eq!(h, "```python\n@dataclass\nclass MLP(Base)\n```\n\nA multi-layer\nperceptron.\n\n`pkg/up.py:12`\n");
    }

    #[test]
    fn completions_list_top_level_then_methods() {
        let f = file();
        let top: Vec<String> = f.completions("M").into_iter().map(|c| c.0).collect();
        assert_eq!(top, ["Base", "MLP", "rotate"]);
        let methods: Vec<String> = f.completions("MLP.f").into_iter().map(|c| c.0).collect();
        assert_eq!(methods, ["MLP.forward"]);
        assert_eq!(source_module_of("x\nconfig = PatchConfig(\n    source_module = 'a.b',\n)"), Some("a.b".into()));
    }
}
