//! `_replace_method_body_with_preserved`, applied to one class segment for
//! each of its method overrides in turn, without re-parsing the whole class
//! each time when the result provably does not need it.

use std::ops::Range;

use ruff_python_ast::{Stmt, StmtClassDef};
use ruff_text_size::{Ranged, TextSize};

use super::is_empty_body_node;
use crate::codegen::CodegenError;
use crate::codegen::text::{indent_preserved_source, indent_width, split_leading_comments};
use patchgen_python::pysource::{ParsedFile, keyword_line};
use patchgen_python::pytext;

/// Python's `lst[a:b]` for non-negative bounds.
fn slice(lines: &[&str], a: usize, b: usize) -> Vec<String> {
    let b = b.min(lines.len());
    if a >= b {
        return Vec::new();
    }
    lines[a..b].iter().map(|s| s.to_string()).collect()
}

/// A statement of the class body, as far as overriding methods cares.
/// Lines are 0-based indexes into the segment's lines; ends are exclusive.
#[derive(Debug, Clone, PartialEq)]
enum Member {
    Method { name: String, start: usize, decorator_start: usize, end: usize },
    Empty { start: usize, end: usize },
    Other,
}

fn to_line(line: isize) -> usize {
    usize::try_from(line).expect("member lines lie inside the segment")
}

impl Member {
    fn shifted(&self, delta: isize) -> Member {
        let s = |l: usize| to_line(l as isize + delta);
        match self {
            Member::Method { name, start, decorator_start, end } => Member::Method {
                name: name.clone(),
                start: s(*start),
                decorator_start: s(*decorator_start),
                end: s(*end),
            },
            Member::Empty { start, end } => Member::Empty { start: s(*start), end: s(*end) },
            Member::Other => Member::Other,
        }
    }
}

/// What `_replace_method_body_with_preserved` reads from `ast.parse` of a
/// class segment: where the class starts and the statements of its body.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ClassShape {
    /// 0-based line of the `class` keyword.
    class_start: usize,
    /// The whitespace before the first body statement, when that statement
    /// starts its own line (`None` for `class A: pass` and the like).
    body_indent: Option<String>,
    members: Vec<Member>,
}

/// The whitespace a statement starting at `offset` is indented by, when it
/// is the first thing on its line and that line does not continue the one
/// above (after a backslash, the indentation is the line above's).
fn own_line_indent(file: &ParsedFile, offset: TextSize) -> Option<String> {
    let line_start = file.text[..usize::from(offset)].rfind('\n').map_or(0, |i| i + 1);
    if line_start >= 2 && file.text.as_bytes()[line_start - 2] == b'\\' {
        return None;
    }
    let prefix = &file.text[line_start..usize::from(offset)];
    prefix.bytes().all(|b| b == b' ' || b == b'\t').then(|| prefix.to_string())
}

impl ClassShape {
    /// Read from a parse in which segment line 0 is the file's line
    /// `first_line` (1-based).
    fn read(file: &ParsedFile, class_def: &StmtClassDef, first_line: usize) -> ClassShape {
        ClassShape {
            class_start: keyword_line(file, class_def.name.start()) - first_line,
            body_indent: class_def.body.first().and_then(|s| own_line_indent(file, s.start())),
            members: Self::members(file, &class_def.body, first_line as isize),
        }
    }

    /// The body's members, with the file's line `origin` (1-based) as
    /// segment line 0.
    fn members(file: &ParsedFile, body: &[Stmt], origin: isize) -> Vec<Member> {
        // A 1-based end line is also the 0-based exclusive end.
        let start = |offset: TextSize| to_line(file.line_of(offset) as isize - origin);
        let end = |offset: TextSize| to_line(file.line_of(offset) as isize - origin + 1);
        body.iter()
            .map(|stmt| match stmt {
                Stmt::FunctionDef(f) => {
                    let kw = to_line(keyword_line(file, f.name.start()) as isize - origin);
                    Member::Method {
                        name: f.name.id.to_string(),
                        start: kw,
                        decorator_start: f
                            .decorator_list
                            .iter()
                            .map(|d| start(d.expression.start()))
                            .min()
                            .unwrap_or(kw),
                        end: end(f.end()),
                    }
                }
                s if is_empty_body_node(s) => Member::Empty { start: start(s.start()), end: end(s.end()) },
                _ => Member::Other,
            })
            .collect()
    }

    /// The shape of `source` by parsing it, as the reference does; `None`
    /// when it does not parse or holds no top-level class.
    pub(super) fn parse(source: &str) -> Option<ClassShape> {
        let file = ParsedFile::parse(Default::default(), source).ok()?;
        // `ast.walk` is breadth-first: the first class is a top-level one.
        let class_def = file.body().iter().find_map(|s| if let Stmt::ClassDef(c) = s { Some(c) } else { None })?;
        Some(Self::read(&file, class_def, 1))
    }
}

/// Whether a line ends on a backslash (possibly a continuation; comments
/// are not told apart).
fn continues(line: &str) -> bool {
    line.trim_end_matches([' ', '\t']).ends_with('\\')
}

/// What is known about the parse of the current text.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    Shape(ClassShape),
    /// The text is a splice of the one `Splice::shape` describes: work its
    /// shape out when it is next needed (after a class's last override it
    /// never is).
    Spliced(Box<Splice>),
    /// Not known: parse the text when it is next needed.
    Unparsed,
    /// The text does not parse (or holds no class): every further override
    /// leaves it as it is.
    Unusable,
}

/// The body members `replaced` of the text `shape` describes, which were
/// `removed` lines from `spliced.start` on, are now the lines `spliced`.
#[derive(Debug, Clone, PartialEq)]
struct Splice {
    shape: ClassShape,
    spliced: Range<usize>,
    replaced: Range<usize>,
    removed: usize,
}

/// A class segment rewritten by its method overrides one after another
/// (`_replace_method_body_with_preserved` in a loop). The reference
/// re-parses the class after every override; this keeps the parse's shape
/// up to date instead, parsing only the spliced-in lines (inside a
/// `class _:` of their own) when that provably gives the same shape, and
/// the whole text otherwise. `tests` compare it with re-parsing every time.
pub struct ClassEdit {
    /// The current text is these joined with "\n". No element holds a line
    /// break, so `str.splitlines` of the text is them, less one trailing
    /// empty element.
    text: Vec<String>,
    known: Known,
    /// Where each element of `text` came from.
    origins: Vec<ClassLine>,
    /// Upstream lines an override removed, with the override's number.
    dropped: Vec<(u32, u32)>,
    /// How many overrides were applied so far.
    applied: u32,
}

/// Where a line of a rewritten class came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClassLine {
    /// Upstream line (1-based).
    Upstream(u32),
    /// Line `line` (0-based) of the prepared source of the `k`-th override
    /// applied.
    Override { k: u32, line: u32 },
}

/// A rewritten class: its text, each line's origin, and the upstream
/// lines (with the override number) the overrides removed.
pub type TracedClass = (String, Vec<ClassLine>, Vec<(u32, u32)>);

fn slice_origins(origins: &[ClassLine], a: usize, b: usize) -> Vec<ClassLine> {
    let b = b.min(origins.len());
    if a >= b {
        return Vec::new();
    }
    origins[a..b].to_vec()
}

impl ClassEdit {
    /// Start from a class segment's lines, with its shape when known
    /// (from the upstream module's parse).
    pub(super) fn new(lines: Vec<String>, shape: Option<ClassShape>, first_line: u32) -> ClassEdit {
        debug_assert!(lines.iter().all(|l| pytext::splitlines(l).len() <= 1 && !l.contains('\n')));
        let origins = (0..lines.len() as u32).map(|i| ClassLine::Upstream(first_line + i)).collect();
        ClassEdit {
            text: lines,
            known: shape.map_or(Known::Unparsed, Known::Shape),
            origins,
            dropped: Vec::new(),
            applied: 0,
        }
    }

    /// The class segment `source_lines[range]` of an upstream module, whose
    /// parse is the upstream's class statement when the segment is exactly
    /// that statement with blank, comment and decorator lines above: it
    /// starts after the previous top-level statement's last line (`after`,
    /// 1-based), does not end on a backslash continuation, and the
    /// upstream's line numbers index `source_lines` (`newline_only`).
    pub fn upstream_segment(
        upstream: &ParsedFile,
        source_lines: &[&str],
        newline_only: bool,
        class_def: &StmtClassDef,
        range: Range<usize>,
        after: usize,
    ) -> ClassEdit {
        let lines: Vec<String> = source_lines[range.clone()].iter().map(|l| l.to_string()).collect();
        let standalone = newline_only && range.start >= after && lines.last().is_some_and(|l| !continues(l));
        let shape = standalone.then(|| ClassShape::read(upstream, class_def, range.start + 1));
        ClassEdit::new(lines, shape, range.start as u32 + 1)
    }

    /// Always re-parse, as the reference does (for comparison in tests).
    #[cfg(test)]
    pub(super) fn reparsing(lines: Vec<String>) -> ClassEdit {
        ClassEdit::new(lines, None, 1)
    }

    #[cfg(test)]
    pub(super) fn clone_text(&self) -> String {
        self.text.join("\n")
    }

    /// The shape kept for the current text, if any.
    #[cfg(test)]
    pub(super) fn kept_shape(&mut self) -> Option<&ClassShape> {
        self.resolve_splice();
        match &self.known {
            Known::Shape(s) => Some(s),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn finish(self) -> String {
        self.text.join("\n")
    }

    /// The text, each line's origin, and the upstream lines removed.
    pub fn finish_traced(self) -> TracedClass {
        (self.text.join("\n"), self.origins, self.dropped)
    }

    /// Record that `origins[a..b]` are replaced by override `k`.
    fn drop_lines(&mut self, a: usize, b: usize, k: u32) {
        for line in slice_origins(&self.origins, a, b) {
            if let ClassLine::Upstream(l) = line {
                self.dropped.push((l, k));
            }
        }
    }

    fn resolve_splice(&mut self) {
        if let Known::Spliced(s) = &self.known {
            self.known = splice_shape(&s.shape, &self.text, s.spliced.clone(), s.replaced.clone(), s.removed);
        }
    }

    /// `str.splitlines` of the current text.
    fn lines(&self) -> Vec<&str> {
        let n = self.text.len() - usize::from(self.text.last().is_some_and(|l| l.is_empty()));
        self.text[..n].iter().map(String::as_str).collect()
    }

    /// `_replace_method_body_with_preserved(text, method_name, preserved)`.
    pub fn replace_method(&mut self, method_name: &str, preserved: &str) -> Result<(), CodegenError> {
        let k = self.applied;
        self.applied += 1;
        self.resolve_splice();
        if self.known == Known::Unparsed {
            self.known = ClassShape::parse(&self.text.join("\n")).map_or(Known::Unusable, Known::Shape);
        }
        let Known::Shape(shape) = std::mem::replace(&mut self.known, Known::Unparsed) else {
            self.known = Known::Unusable;
            return Ok(());
        };
        let source_lines = self.lines();
        let line = |i: usize| -> Result<&str, CodegenError> {
            source_lines.get(i).copied().ok_or_else(|| CodegenError {
                message: format!("line {} of the class segment is out of range (upstream line numbering and str.splitlines disagree)", i + 1),
                help: Some("the upstream file contains form feeds or other characters Python treats as line breaks".into()),
                location: None,
            })
        };
        let class_indent = source_lines.get(shape.class_start).map(|l| indent_width(l)).unwrap_or(0);

        let method = shape.members.iter().enumerate().find_map(|(i, m)| match m {
            Member::Method { name, start, decorator_start, end } if name == method_name => {
                Some((i, *start, *decorator_start, *end))
            }
            _ => None,
        });
        if let Some((index, method_start, decorator_start, method_end)) = method {
            let method_indent = match source_lines.get(method_start) {
                Some(l) => indent_width(l),
                None => class_indent + 4,
            };
            let (leading, def_source) = split_leading_comments(preserved);
            let indented_leading = if leading.is_empty() {
                Vec::new()
            } else {
                indent_preserved_source(&leading.join("\n"), method_indent)
            };
            let indented_def = indent_preserved_source(&def_source, method_indent);
            let n = source_lines.len();
            let mut origins = slice_origins(&self.origins, 0, decorator_start);
            origins.extend((0..indented_leading.len() as u32).map(|line| ClassLine::Override { k, line }));
            origins.extend(slice_origins(&self.origins, decorator_start, method_start));
            let def_offset = crate::codegen::text::leading_lines(&pytext::splitlines(preserved));
            origins
                .extend((0..indented_def.len() as u32).map(|i| ClassLine::Override { k, line: def_offset as u32 + i }));
            origins.extend(slice_origins(&self.origins, method_end, n));
            let mut out = slice(&source_lines, 0, decorator_start);
            out.extend(indented_leading);
            out.extend(slice(&source_lines, decorator_start, method_start));
            out.extend(indented_def);
            let spliced = decorator_start.min(out.len())..out.len();
            let removed = method_end.min(source_lines.len()).saturating_sub(decorator_start);
            out.extend(slice(&source_lines, method_end, source_lines.len()));
            self.known = Known::Spliced(Box::new(Splice { shape, spliced, replaced: index..index + 1, removed }));
            self.drop_lines(method_start, method_end, k);
            self.text = out;
            self.origins = origins;
            return Ok(());
        }

        let method_indent = class_indent + 4;
        let indented = indent_preserved_source(preserved, method_indent);
        if let Some((start, end)) = shape.members.iter().find_map(|m| match m {
            Member::Empty { start, end } => Some((*start, *end)),
            _ => None,
        }) {
            let header = line(start)?;
            let colon = header.rfind(':');
            let after = match colon {
                Some(i) => header[i + 1..].split('#').next().unwrap_or(""),
                None => "",
            };
            let mut out = slice(&source_lines, 0, start);
            let mut origins = slice_origins(&self.origins, 0, start);
            if let Some(colon) = colon
                && matches!(pytext::strip(after), "pass" | "...")
            {
                out.push(pytext::rstrip(&header[..colon + 1]).to_string());
                origins.push(self.origins.get(start).copied().unwrap_or(ClassLine::Override { k, line: 0 }));
            }
            origins.extend((0..indented.len() as u32).map(|line| ClassLine::Override { k, line }));
            origins.extend(slice_origins(&self.origins, end, source_lines.len()));
            out.extend(indented);
            out.extend(slice(&source_lines, end, source_lines.len()));
            // Rare (a method injected into `pass`/`...`): re-parse next time.
            self.known = Known::Unparsed;
            self.drop_lines(start, end, k);
            self.text = out;
            self.origins = origins;
            return Ok(());
        }
        let mut out: Vec<String> = source_lines.iter().map(|s| s.to_string()).collect();
        let mut origins = slice_origins(&self.origins, 0, out.len());
        if out.last().is_some_and(|l| !pytext::is_blank(l)) {
            out.push(String::new());
            origins.push(ClassLine::Override { k, line: 0 });
        }
        let spliced = out.len()..out.len() + indented.len();
        origins.extend((0..indented.len() as u32).map(|line| ClassLine::Override { k, line }));
        out.extend(indented);
        let n = shape.members.len();
        self.known = Known::Spliced(Box::new(Splice { shape, spliced, replaced: n..n, removed: 0 }));
        self.text = out;
        self.origins = origins;
        Ok(())
    }
}

/// The shape of `out`, which is the text `shape` describes with the body
/// members `replaced` (whose lines were `removed` lines starting at
/// `spliced.start`) replaced by the lines `out[spliced]`, when parsing those
/// lines alone proves it; `Unparsed` when it does not.
///
/// Why parsing the spliced lines alone is enough: the old text parsed, so
/// the lines before the splice end at a statement boundary of the class body
/// (no open bracket or string, and not on a backslash continuation, which is
/// checked), with the indentation stack at the body's level once the next
/// statement comes. If the spliced lines parse as the body of `class _:` and
/// their first statement is indented exactly as the class body, the tokenizer
/// reads them the same way in place, ending at a statement boundary with the
/// same stack, and the lines after the splice (which began at the body's
/// level or the top level in the old text) dedent as before.
fn splice_shape(
    shape: &ClassShape,
    out: &[String],
    spliced: Range<usize>,
    replaced: Range<usize>,
    removed: usize,
) -> Known {
    let incremental = || -> Option<ClassShape> {
        let body_indent = shape.body_indent.as_deref().filter(|i| !i.is_empty())?;
        let new_lines = out.get(spliced.clone()).filter(|l| !l.is_empty())?;
        if spliced.start == 0 || continues(&out[spliced.start - 1]) || continues(new_lines.last()?) {
            return None;
        }
        let mut wrapper = String::from("class _:\n");
        for l in new_lines {
            wrapper.push_str(l);
            wrapper.push('\n');
        }
        let file = ParsedFile::parse(Default::default(), &wrapper).ok()?;
        let [Stmt::ClassDef(class_def)] = file.body() else { return None };
        let first = class_def.body.first()?;
        if own_line_indent(&file, first.start()).as_deref() != Some(body_indent) {
            return None;
        }
        // Wrapper line 2 (1-based) is `out[spliced.start]`.
        let added = ClassShape::members(&file, &class_def.body, 2 - spliced.start as isize);
        let delta = spliced.len() as isize - removed as isize;
        let mut members = shape.members[..replaced.start].to_vec();
        members.extend(added);
        members.extend(shape.members[replaced.end..].iter().map(|m| m.shifted(delta)));
        Some(ClassShape { class_start: shape.class_start, body_indent: shape.body_indent.clone(), members })
    };
    incremental().map_or(Known::Unparsed, Known::Shape)
}
