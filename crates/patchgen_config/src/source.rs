//! Source text of functions and classes defined in a config file, exactly as
//! the reference obtains it: `inspect.getsource` (CPython 3.11 rules) plus
//! the contiguous column-0 `#` comment block directly above it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ruff_python_ast::Stmt;
use ruff_text_size::{Ranged, TextRange};

use super::plan::Loc;
use patchgen_python::pysource::{ParsedFile, keyword_line};
use patchgen_python::pytext;

#[path = "from_parse.rs"]
mod from_parse;
#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;

/// The sources of the objects a file defines, by (qualified name, first
/// line, is a class): configs of one model share most of their replacement
/// objects, so each is extracted once per file (a [`ParsedFile::memo`]).
#[derive(Default)]
struct Sources(Mutex<HashMap<SourceKey, Result<ObjectSource, SourceError>>>);

/// An object's (qualified name, first line, is a class).
type SourceKey = (String, usize, bool);

/// Locations as the config reader reports them: a file and a line, with
/// the node's range for the source excerpt.
pub trait LocOf {
    fn loc(&self, range: TextRange) -> Loc;
}

impl LocOf for ParsedFile {
    fn loc(&self, range: TextRange) -> Loc {
        let (line, column) = self.line_column(range.start());
        let end = self.line_column(range.end().max(range.start()));
        Loc { path: self.path.clone(), line, column, end: Some(end) }
    }
}

/// A function or class defined in a module patchgen evaluated.
#[derive(Debug)]
pub struct DefObj {
    pub name: String,
    /// `__qualname__` (`Outer.Inner` for a class in a class body).
    pub qualname: String,
    /// Dotted name of the defining module (`__module__`).
    pub module: String,
    pub file: Arc<ParsedFile>,
    pub is_class: bool,
    /// 1-based line CPython records as the object's first line: for a
    /// function `co_firstlineno` (its first decorator, else the `def`); for a
    /// class, unused (inspect looks classes up by qualified name).
    pub first_line: usize,
    /// Where the definition statement is, for messages.
    pub loc: Loc,
}

/// `inspect._ClassFinder`: the first class (pre-order) whose qualified name
/// is `qualname`; returns the 0-based line inspect starts the block at.
pub fn find_class_start(file: &ParsedFile, qualname: &str) -> Option<usize> {
    fn walk(file: &ParsedFile, body: &[Stmt], stack: &mut Vec<String>, qualname: &str) -> Option<usize> {
        for stmt in body {
            if let Some(found) = walk_stmt(file, stmt, stack, qualname) {
                return Some(found);
            }
        }
        None
    }
    fn walk_stmt(file: &ParsedFile, stmt: &Stmt, stack: &mut Vec<String>, qualname: &str) -> Option<usize> {
        match stmt {
            Stmt::FunctionDef(f) => {
                stack.push(f.name.id.to_string());
                stack.push("<locals>".into());
                let r = walk(file, &f.body, stack, qualname);
                stack.pop();
                stack.pop();
                r
            }
            Stmt::ClassDef(c) => {
                stack.push(c.name.id.to_string());
                if stack.join(".") == qualname {
                    let line = match c.decorator_list.first() {
                        Some(d) => file.line_of(d.expression.start()),
                        None => keyword_line(file, c.name.start()),
                    };
                    stack.pop();
                    return Some(line - 1);
                }
                let r = walk(file, &c.body, stack, qualname);
                stack.pop();
                r
            }
            Stmt::If(s) => walk(file, &s.body, stack, qualname)
                .or_else(|| s.elif_else_clauses.iter().find_map(|c| walk(file, &c.body, stack, qualname))),
            Stmt::For(s) => walk(file, &s.body, stack, qualname).or_else(|| walk(file, &s.orelse, stack, qualname)),
            Stmt::While(s) => walk(file, &s.body, stack, qualname).or_else(|| walk(file, &s.orelse, stack, qualname)),
            Stmt::With(s) => walk(file, &s.body, stack, qualname),
            Stmt::Try(s) => walk(file, &s.body, stack, qualname)
                .or_else(|| {
                    s.handlers.iter().find_map(|h| {
                        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                        walk(file, &h.body, stack, qualname)
                    })
                })
                .or_else(|| walk(file, &s.orelse, stack, qualname))
                .or_else(|| walk(file, &s.finalbody, stack, qualname)),
            Stmt::Match(s) => s.cases.iter().find_map(|c| walk(file, &c.body, stack, qualname)),
            _ => None,
        }
    }
    walk(file, file.body(), &mut Vec::new(), qualname)
}

/// Why an object's source could not be found (inspect's `OSError`).
#[derive(Debug, Clone)]
pub struct SourceError(pub String);

/// `inspect.getsource(obj)` for a function or class.
fn getsourcelines<'a>(def: &DefObj, lines: &[&'a str]) -> Result<(Vec<&'a str>, usize), SourceError> {
    let lnum = if def.is_class {
        find_class_start(&def.file, &def.qualname)
            .ok_or_else(|| SourceError(format!("could not find class definition of {}", def.name)))?
    } else {
        pytext::getblock::find_function_start(lines, def.first_line - 1).map_err(|e| SourceError(format!("{e:?}")))?
    };
    if lnum >= lines.len() {
        return Err(SourceError("lineno is out of bounds".into()));
    }
    let read_off_parse = if def.is_class { None } else { from_parse::block_len(&def.file, lines, lnum) };
    let n = match read_off_parse {
        Some(n) => n,
        None => pytext::getblock::getblock(&lines[lnum..]).map_err(|e| SourceError(format!("{e}")))?,
    };
    Ok((lines[lnum..lnum + n].to_vec(), lnum))
}

/// An object's source text, and what is known about parsing it.
#[derive(Debug, Clone)]
pub struct ObjectSource {
    pub text: String,
    /// `textwrap.dedent(text)` parses as a module holding a function
    /// definition (see [`dedents_to_function`]).
    pub dedents_to_function: bool,
    /// The 1-based file line of `text`'s first line.
    pub first_line: usize,
    /// How many of `text`'s lines are the leading comment block (its
    /// other lines start at file line `code_line`).
    pub leading: usize,
    /// The 1-based file line of the first line after the comment block.
    pub code_line: usize,
}

/// The reference's `get_object_source_with_leading_comments` (computed once
/// per object and file).
pub fn object_source_with_leading_comments(def: &DefObj) -> Result<ObjectSource, SourceError> {
    let key = (def.qualname.clone(), def.first_line, def.is_class);
    let sources = def.file.memo::<Sources>();
    if let Some(found) = sources.0.lock().expect("not poisoned").get(&key) {
        return found.clone();
    }
    let found = compute_object_source(def);
    sources.0.lock().expect("not poisoned").insert(key, found.clone());
    found
}

fn compute_object_source(def: &DefObj) -> Result<ObjectSource, SourceError> {
    // `linecache` gives a last line without "\n" one (the comment walk
    // above the object never reaches the last line, so it can share these).
    let mut lines = def.file.readlines();
    let completed;
    if let Some(last) = lines.last_mut().filter(|l| !l.ends_with('\n')) {
        completed = format!("{last}\n");
        *last = &completed;
    }
    let (src_lines, start) = getsourcelines(def, &lines)?;
    let mut actual_start = start;
    while actual_start > 0 {
        let raw = lines[actual_start - 1].strip_suffix('\n').unwrap_or(lines[actual_start - 1]);
        if pytext::is_blank(raw) || raw.starts_with('#') {
            actual_start -= 1;
            continue;
        }
        break;
    }
    let mut leading = &lines[actual_start..start];
    let mut first_line = actual_start;
    while let Some(first) = leading.first() {
        if pytext::is_blank(first) {
            leading = &leading[1..];
            first_line += 1;
        } else {
            break;
        }
    }
    while let Some(last) = leading.last() {
        if pytext::is_blank(last) {
            leading = &leading[..leading.len() - 1];
        } else {
            break;
        }
    }
    let mut out = String::new();
    for l in leading.iter().chain(src_lines.iter()) {
        out.push_str(l);
    }
    let dedents_to_function = !def.is_class
        && def.first_line == start + 1
        && from_parse::dedents_to_function(&def.file, &lines, start..start + src_lines.len(), !leading.is_empty());
    let code_line = start + 1;
    let first_line = if leading.is_empty() { start } else { first_line } + 1;
    Ok(ObjectSource { text: out, dedents_to_function, first_line, leading: leading.len(), code_line })
}

/// The class statement a `DefObj` stands for (by its keyword line).
pub fn find_class_stmt(file: &ParsedFile, keyword_line_1: usize) -> Option<&ruff_python_ast::StmtClassDef> {
    fn walk<'f>(file: &'f ParsedFile, body: &'f [Stmt], line: usize) -> Option<&'f ruff_python_ast::StmtClassDef> {
        for stmt in body {
            let found = match stmt {
                Stmt::ClassDef(c) if keyword_line(file, c.name.start()) == line => Some(c),
                Stmt::ClassDef(c) => walk(file, &c.body, line),
                Stmt::If(s) => walk(file, &s.body, line)
                    .or_else(|| s.elif_else_clauses.iter().find_map(|c| walk(file, &c.body, line))),
                Stmt::Try(s) => walk(file, &s.body, line).or_else(|| walk(file, &s.orelse, line)),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    walk(file, file.body(), keyword_line_1)
}

/// `Class.attr` for a function or class defined directly in the class body
/// (the last binding wins, as in the class namespace).
pub fn class_member(class: &DefObj, attr: &str) -> Option<DefObj> {
    let stmt = find_class_stmt(&class.file, class.loc.line)?;
    let mut found = None;
    for member in &stmt.body {
        match member {
            Stmt::FunctionDef(f) if f.name.id.as_str() == attr => {
                let def_line = keyword_line(&class.file, f.name.start());
                let first_line =
                    f.decorator_list.first().map(|d| class.file.line_of(d.expression.start())).unwrap_or(def_line);
                found = Some(DefObj {
                    name: attr.to_string(),
                    qualname: format!("{}.{attr}", class.qualname),
                    module: class.module.clone(),
                    file: class.file.clone(),
                    is_class: false,
                    first_line,
                    loc: Loc::line(class.file.path.clone(), def_line),
                });
            }
            Stmt::ClassDef(c) if c.name.id.as_str() == attr => {
                let def_line = keyword_line(&class.file, c.name.start());
                found = Some(DefObj {
                    name: attr.to_string(),
                    qualname: format!("{}.{attr}", class.qualname),
                    module: class.module.clone(),
                    file: class.file.clone(),
                    is_class: true,
                    first_line: def_line,
                    loc: Loc::line(class.file.path.clone(), def_line),
                });
            }
            Stmt::Assign(a)
                if a.targets.iter().any(|t| matches!(t, ruff_python_ast::Expr::Name(n) if n.id.as_str() == attr)) =>
            {
                found = None;
            }
            _ => {}
        }
    }
    found
}
