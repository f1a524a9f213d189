//! Protocol phase 6 for `patchgen new`: the new model's rows in the
//! project's test tables, copied from its sibling's (the template `new`
//! copied the config from), and the phase-7 commands that run them.
//!
//! Contract:
//! - The table files are the protocol's (`TABLE_FILES`), each with its
//!   category rule: VLM/omni tables only for a VLM/omni model, the FSDP
//!   equivalence table only for a text model, the converter test group only
//!   when `new` wrote a checkpoint converter. Nothing else about a table is
//!   known in advance: tables are found by parsing the file
//!   ([`find`]), the sibling's rows by the names they spell ([`rename`]).
//! - Each of the sibling's rows is copied ([`copy`]) and the copies go
//!   right after the sibling's rows, adding lines only ([`write`]). A file
//!   where the sibling has no row falls back to the next reference model of
//!   the category that has one (said in the report); when none has, the file
//!   gets no row, and the report says so. The optional FSDP-equivalence
//!   table takes the template's rows only.
//! - [`plan`] reads and decides everything, writes nothing; a table file
//!   that Python's grammar rejects is an error naming it (file:line) — the
//!   caller then writes nothing at all. [`write_all`] writes the planned
//!   files atomically.
//! - Every planned file is checked: only added lines, parseable, and (when
//!   ruff is given) accepted by the project's ruff: `check --fix` and
//!   `format` leave it unchanged or change only the added lines (then the
//!   formatted text is written and reported); a file our rows would make
//!   ruff reject is not written (said in the report).

pub mod converter_group;
pub mod copy;
pub mod find;
pub mod project;
pub mod rename;
pub mod render;
pub mod write;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::facts::Category;
pub use copy::AttnSupport;
use patchgen_core::normalize::Ruff;
pub use rename::ModelNames;

/// Which models a table file is for (protocol phase 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applies {
    Every,
    /// VLM (and VLM-MoE) models only.
    Vlm,
    /// VLM and omni models.
    Multimodal,
    /// Text (dense or MoE) models only.
    Text,
    /// A model `new` wrote a checkpoint converter for.
    Converter,
}

impl Applies {
    fn admits(self, category: Category, converter: bool) -> bool {
        match self {
            Applies::Every => true,
            Applies::Vlm => matches!(category, Category::Vlm | Category::VlmMoe),
            Applies::Multimodal => category.is_multimodal(),
            Applies::Text => !category.is_multimodal(),
            Applies::Converter => converter,
        }
    }

    fn rule(self) -> &'static str {
        match self {
            Applies::Every => "every model",
            Applies::Vlm => "VLM models only",
            Applies::Multimodal => "VLM and omni models only",
            Applies::Text => "text models only",
            Applies::Converter => "models with a checkpoint converter only",
        }
    }
}

/// A table file of the protocol.
pub struct TableFile {
    pub path: &'static str,
    pub applies: Applies,
    /// Optional coverage (protocol: "optional"): the template's rows only.
    pub optional: bool,
}

/// The protocol's table files (phase 6), in the order phase 7 runs them.
pub const TABLE_FILES: &[TableFile] = &[
    TableFile { path: "tests/models/test_models_logits_equal_v5.py", applies: Applies::Every, optional: false },
    TableFile { path: "tests/models/test_models_patch.py", applies: Applies::Every, optional: false },
    TableFile { path: "tests/e2e/test_e2e_parallel.py", applies: Applies::Every, optional: false },
    TableFile {
        path: "tests/models/test_checkpoint_tensor_converter.py",
        applies: Applies::Converter,
        optional: false,
    },
    TableFile { path: "tests/distributed/test_dummy_forward.py", applies: Applies::Multimodal, optional: false },
    TableFile { path: "tests/models/test_vlm_trainer.py", applies: Applies::Vlm, optional: false },
    TableFile { path: "tests/distributed/test_fsdp_equivalence.py", applies: Applies::Text, optional: true },
];

/// Whether `file` (project-relative) is one of the table files this module writes.
pub fn handles(file: &str) -> bool {
    TABLE_FILES.iter().any(|t| t.path == file)
}

/// What `plan` needs.
pub struct Request<'a> {
    pub root: &'a Path,
    pub category: Category,
    pub new: ModelNames,
    /// The template first, then the category's other reference models the project has.
    pub donors: Vec<ModelNames>,
    /// Every project model's names.
    pub project_aliases: Vec<String>,
    pub attn: AttnSupport,
    /// The converter `new` wrote, when it wrote one.
    pub converter: Option<converter_group::Written<'a>>,
    pub ruff: Option<&'a Ruff>,
}

/// Why a test table could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum TestRowsError {
    #[error(
        "{path}:{line}: the test table file does not parse: {message}\n  help: fix the syntax error (python3 -m py_compile {path}), then run `patchgen new` again; nothing was written"
    )]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("{path}: cannot read the test table file: {message}")]
    Read { path: PathBuf, message: String },
}

/// Why a table file got no row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The project has no such file.
    NoFile,
    /// The category rule excludes the model.
    Category,
    /// Neither the sibling nor another reference model has a row.
    NoSiblingRow,
    /// The rows share lines with other code: no line-only insertion.
    SharedLine,
    /// Our rows would make the project's ruff reject or reformat the file.
    Ruff,
    /// The file already has rows for the new model.
    AlreadyThere,
}

/// A table file left alone, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub file: String,
    pub reason: SkipReason,
    pub message: String,
}

/// One copied row.
#[derive(Clone, Debug, Serialize)]
pub struct RowCopy {
    pub id: Option<String>,
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resets: Vec<String>,
}

/// The rows added to one table.
#[derive(Clone, Debug, Serialize)]
pub struct TableRows {
    pub table: String,
    /// 1-based line of the original file the rows go after.
    pub after_line: usize,
    pub donor: String,
    pub rows: Vec<RowCopy>,
    /// The test functions parametrized with the table.
    pub tests: Vec<String>,
    /// The ids of the table's other rows (to keep `-k` from selecting them).
    #[serde(skip)]
    pub other_ids: Vec<String>,
}

/// One test file to change.
#[derive(Clone, Debug, Serialize)]
pub struct FileEdit {
    /// Project-relative.
    pub file: String,
    pub tables: Vec<TableRows>,
    /// The donor when it is not the template (a fallback), and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    #[serde(skip)]
    pub path: PathBuf,
    #[serde(skip)]
    pub text: String,
}

/// What phase 6 adds and phase 7 runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TestRows {
    pub template: Option<String>,
    pub files: Vec<FileEdit>,
    pub skipped: Vec<Skipped>,
    /// Code outside the tables that singles the sibling out (`case_id == "<sibling>"`).
    pub notes: Vec<String>,
    /// The phase-7 commands, with the ids written.
    pub commands: Vec<String>,
    /// Lines the project's ruff was not run on, or not available for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A parsed table file.
struct Parsed {
    file: patchgen_python::pysource::ParsedFile,
    line_starts: Vec<usize>,
    comment_lines: HashSet<usize>,
    module_names: Vec<String>,
}

fn parse(path: &Path) -> Result<Option<(String, Parsed)>, TestRowsError> {
    let raw = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TestRowsError::Read { path: path.to_path_buf(), message: e.to_string() }),
    };
    let (file, tokens) = patchgen_python::pysource::ParsedFile::parse_with_tokens(path.to_path_buf(), &raw)
        .map_err(|p| TestRowsError::Parse { path: path.to_path_buf(), line: p.line, message: p.message })?;
    // The file's own line index, without the empty line after a final `\n`.
    let mut line_starts: Vec<usize> = (1..=file.line_count()).map(|l| file.line_start(l)).collect();
    if line_starts.last() == Some(&file.text.len()) && line_starts.len() > 1 {
        line_starts.pop();
    }
    let mut comment_lines = HashSet::new();
    for t in tokens.iter() {
        if t.kind() == ruff_python_ast::token::TokenKind::Comment {
            let start = usize::from(ruff_text_size::Ranged::start(t));
            let line = line_starts.partition_point(|&s| s <= start) - 1;
            if file.text[line_starts[line]..start].trim().is_empty() {
                comment_lines.insert(line);
            }
        }
    }
    let module_names = find::module_names(file.body());
    Ok(Some((raw, Parsed { file, line_starts, comment_lines, module_names })))
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// Plan the rows of every table file; nothing is written.
pub fn plan(req: &Request<'_>) -> Result<TestRows, TestRowsError> {
    let mut out = TestRows { template: req.donors.first().map(|d| d.hf.clone()), ..TestRows::default() };
    // No command for `tests/models/test_model_registry.py`: its tables list
    // models by role (HF-registered or not), not by sibling, and `new`
    // writes no row there; a command running other models' rows proves
    // nothing about this one.
    // Parse every applicable file first: one that does not parse stops
    // everything before anything is decided.
    let mut parsed = Vec::new();
    for spec in TABLE_FILES {
        let path = req.root.join(spec.path);
        if !spec.applies.admits(req.category, req.converter.is_some()) {
            if path.is_file() {
                let why = if spec.applies == Applies::Converter {
                    format!("no checkpoint converter was written for {}", req.new.hf)
                } else {
                    format!("{} is {}", req.new.hf, req.category.as_str())
                };
                out.skipped.push(Skipped {
                    file: spec.path.into(),
                    reason: SkipReason::Category,
                    message: format!("{} ({why})", spec.applies.rule()),
                });
            }
            continue;
        }
        match parse(&path)? {
            Some((raw, p)) => parsed.push((spec, path, raw, p)),
            None => out.skipped.push(Skipped {
                file: spec.path.into(),
                reason: SkipReason::NoFile,
                message: "the project has no such file".into(),
            }),
        }
    }
    // Plan every file, then run the project's ruff over all of them at once.
    struct Pending<'p> {
        spec: &'static TableFile,
        path: &'p Path,
        original: &'p str,
        file: String,
        insertions: Vec<write::Insertion>,
        tables: Vec<TableRows>,
        donor: String,
        notes: Vec<String>,
        text: String,
    }
    let mut pending: Vec<Pending<'_>> = Vec::new();
    for (spec, path, raw, p) in &parsed {
        let file = rel(req.root, path);
        if raw.contains('\r') {
            out.skipped.push(Skipped {
                file: file.clone(),
                reason: SkipReason::SharedLine,
                message: "the file has CR line endings: rows not written (add them by hand)".into(),
            });
            continue;
        }
        let donors: Vec<&ModelNames> =
            if spec.optional { req.donors.iter().take(1).collect() } else { req.donors.iter().collect() };
        let planned = if spec.applies == Applies::Converter {
            converter_group::plan(req, p_source(p).as_ref(), &p.file, &donors, &file)
        } else {
            plan_tables(req, p, &donors, &file)
        };
        match planned {
            Planned::Edit { insertions, tables, donor, notes } => {
                let text = write::insert(&p.file.text, &insertions);
                if !adds_only(&p.file.text, &text) {
                    out.skipped.push(Skipped {
                        file: file.clone(),
                        reason: SkipReason::SharedLine,
                        message: "the rows cannot be added as whole lines that parse: add them by hand".into(),
                    });
                    continue;
                }
                pending.push(Pending {
                    spec,
                    path,
                    original: &p.file.text,
                    file,
                    insertions,
                    tables,
                    donor,
                    notes,
                    text,
                });
            }
            Planned::Skip(reason, message) => out.skipped.push(Skipped { file, reason, message }),
        }
    }
    // The project's ruff, one batch: it accepts a text as it is, or formats
    // the added lines only (a renamed name can make a line too long), or
    // that file's rows are not written.
    let items: Vec<(&str, &Path)> = pending.iter().map(|f| (f.text.as_str(), f.path)).collect();
    let verdicts: Vec<Option<Result<String, patchgen_core::normalize::RuffError>>> = match req.ruff {
        Some(ruff) if !items.is_empty() => ruff.normalize_many(&items, 2).into_iter().map(Some).collect(),
        _ => items.iter().map(|_| None).collect(),
    };
    for (mut f, result) in pending.into_iter().zip(verdicts) {
        if let (Some(ruff), Some(result)) = (req.ruff, result) {
            match result {
                Ok(n) if n == f.text => {}
                Ok(n) if adds_only(f.original, &n) => {
                    f.text = n;
                    reassign(&mut f.tables, &f.insertions, write::added_blocks(f.original, &f.text));
                }
                result => match ruff_verdict(ruff, result, f.original, f.path) {
                    RuffVerdict::Accepts => {}
                    RuffVerdict::Unavailable(why) => out.warnings.push(format!("{}: ruff not run ({why})", f.file)),
                    RuffVerdict::Rejects(why) => {
                        out.skipped.push(Skipped { file: f.file, reason: SkipReason::Ruff, message: why });
                        continue;
                    }
                },
            }
        }
        let fallback = req.donors.first().filter(|t| t.hf != f.donor).map(|t| {
            format!(
                "{} has no row here: copied from {}, the next reference model for {}",
                t.hf,
                f.donor,
                req.category.as_str()
            )
        });
        for t in &f.tables {
            out.commands.extend(command(&f.file, t, f.spec.applies));
        }
        out.notes.extend(f.notes);
        out.files.push(FileEdit { file: f.file, tables: f.tables, fallback, path: f.path.to_path_buf(), text: f.text });
    }
    Ok(out)
}

/// Whether `text` is `original` with whole lines added, and parses.
fn adds_only(original: &str, text: &str) -> bool {
    write::only_added_lines(original, text) && ruff_python_parser::parse_module(text).is_ok()
}

/// The rows' texts after ruff reformatted the added lines: each insertion
/// takes the added block nearest its line; its first row holds it.
fn reassign(tables: &mut [TableRows], insertions: &[write::Insertion], blocks: Vec<(usize, String)>) {
    let mut blocks: Vec<Option<(usize, String)>> = blocks.into_iter().map(Some).collect();
    for ins in insertions {
        let nearest = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|(at, _)| (i, at.abs_diff(ins.before))))
            .min_by_key(|(_, d)| *d)
            .map(|(i, _)| i);
        let Some((_, block)) = nearest.and_then(|i| blocks[i].take()) else { continue };
        let (table, first, count) = ins.owner;
        let Some(t) = tables.get_mut(table) else { continue };
        for (k, row) in t.rows.iter_mut().enumerate().skip(first).take(count) {
            row.text = if k == first { block.clone() } else { String::new() };
        }
    }
}

fn p_source(p: &Parsed) -> Option<copy::Source<'_>> {
    Some(copy::Source {
        text: &p.file.text,
        line_starts: &p.line_starts,
        comment_lines: &p.comment_lines,
        module_names: &p.module_names,
    })
}

/// A file's plan.
pub(crate) enum Planned {
    Edit { insertions: Vec<write::Insertion>, tables: Vec<TableRows>, donor: String, notes: Vec<String> },
    Skip(SkipReason, String),
}

/// The rows of the first donor that has any in this file's tables.
fn plan_tables(req: &Request<'_>, p: &Parsed, donors: &[&ModelNames], file: &str) -> Planned {
    let src = copy::Source {
        text: &p.file.text,
        line_starts: &p.line_starts,
        comment_lines: &p.comment_lines,
        module_names: &p.module_names,
    };
    let tables = find::tables(p.file.body());
    let own = rename::Renamer::new(&req.new, &req.new, req.project_aliases.clone());
    if let Some((t, _)) = tables.iter().find_map(|t| {
        t.rows.iter().find(|r| find::strings(r.expr).iter().any(|(_, s)| own.mentions(s))).map(|r| (t, r))
    }) {
        return Planned::Skip(
            SkipReason::AlreadyThere,
            format!("`{}` already has a row for {}: nothing added", t.name, req.new.hf),
        );
    }
    for donor in donors {
        let renamer = rename::Renamer::new(donor, &req.new, req.project_aliases.clone());
        let mut insertions = Vec::new();
        let mut planned = Vec::new();
        let mut donor_ids = Vec::new();
        for table in &tables {
            let rows: Vec<usize> = table
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| find::strings(r.expr).iter().any(|(_, s)| renamer.mentions(s)))
                .map(|(i, _)| i)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let spans: Result<Vec<copy::Span>, copy::Unsupported> =
                rows.iter().map(|&i| copy::span(&src, table.rows[i].range())).collect();
            let spans = match spans {
                Ok(s) => s,
                Err(copy::Unsupported::SharedLine { line }) => {
                    return Planned::Skip(
                        SkipReason::SharedLine,
                        format!(
                            "{file}:{line}: {}'s row in `{}` shares its line with other code: add the row by hand",
                            donor.hf, table.name
                        ),
                    );
                }
            };
            let cx = copy::Context {
                src: &src,
                table,
                donor_rows: &rows,
                renamer: &renamer,
                new_is_moe: req.category.is_moe(),
                attn: &req.attn,
            };
            let existing: Vec<String> = table
                .rows
                .iter()
                .enumerate()
                .filter(|(i, _)| !rows.contains(i))
                .filter_map(|(_, r)| r.id(table).map(|(_, id)| id))
                .collect();
            let mut copies = Vec::new();
            for (&i, &span) in rows.iter().zip(&spans) {
                if let Some((_, id)) = table.rows[i].id(table) {
                    donor_ids.push(id);
                }
                let mut c = cx.copy(&table.rows[i], span);
                if let Some(id) = &c.id
                    && existing.contains(id)
                {
                    c.todos.push(format!("the table already has a row with id `{id}`: give this one its own"));
                }
                copies.push(c);
            }
            let last = spans.last().copied().unwrap_or(spans[0]);
            let (before, after_line) =
                if last.comma { (last.last + 1, last.last + 1) } else { (spans[0].first, spans[0].first) };
            insertions.push(write::Insertion {
                before,
                text: copies.iter().map(|c| c.text.as_str()).collect(),
                owner: (planned.len(), 0, copies.len()),
            });
            planned.push(TableRows {
                table: table.name.clone(),
                after_line,
                donor: donor.hf.clone(),
                rows: copies
                    .into_iter()
                    .map(|c| RowCopy { id: c.id, text: c.text, todos: c.todos, resets: c.resets })
                    .collect(),
                tests: table.tests.clone(),
                other_ids: existing.clone(),
            });
        }
        if !planned.is_empty() {
            let notes = filters(&p.file, file, &donor_ids, &renamer, &req.new.hf);
            return Planned::Edit { insertions, tables: planned, donor: donor.hf.clone(), notes };
        }
    }
    Planned::Skip(SkipReason::NoSiblingRow, no_donor_row(donors, "row", "in any table"))
}

/// Why nothing was copied: none of the donors has one (or there is no donor).
pub(crate) fn no_donor_row(donors: &[&ModelNames], what: &str, place: &str) -> String {
    if donors.is_empty() {
        return format!("no project model to copy a {what} from (no template): no {what} written");
    }
    let names: Vec<&str> = donors.iter().map(|d| d.hf.as_str()).collect();
    format!("no {what} for {} {place}: no {what} written", names.join(" or "))
}

/// Comparisons outside the tables that single the sibling out
/// (`if case_id == "qwen2_5_omni":`): the new row is not filtered by them.
fn filters(
    file: &patchgen_python::pysource::ParsedFile,
    rel: &str,
    ids: &[String],
    renamer: &rename::Renamer<'_>,
    new: &str,
) -> Vec<String> {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::{Expr, Stmt};
    struct V<'a> {
        found: Vec<(ruff_text_size::TextRange, String)>,
        ids: &'a [String],
        renamer: &'a rename::Renamer<'a>,
    }
    impl<'a> Visitor<'a> for V<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Compare(c) = expr {
                let singles = std::iter::once(&*c.left)
                    .chain(c.comparators.iter())
                    .flat_map(find::strings)
                    .any(|(_, s)| self.ids.contains(&s) || (self.renamer.mentions(&s) && !s.contains('/')));
                if singles {
                    self.found.push((ruff_text_size::Ranged::range(expr), String::new()));
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V { found: Vec::new(), ids, renamer };
    for s in file.body() {
        if matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
            v.visit_stmt(s);
        }
    }
    v.found
        .into_iter()
        .map(|(r, _)| {
            let line = file.line_of(r.start());
            format!(
                "{rel}:{line}: `{}` singles out {}; {new}'s rows are not covered by it: confirm {new} needs no such case",
                &file.text[r],
                renamer.from.hf
            )
        })
        .collect()
}

/// A `-k` expression selecting `ids` and not the other ids containing them.
fn k_expression(ids: &[String], others: &[String]) -> String {
    let mut ids: Vec<&String> = ids.iter().collect();
    ids.dedup();
    let mut expr = ids.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" or ");
    let excluded: Vec<&String> = others
        .iter()
        .filter(|o| !ids.contains(o) && ids.iter().any(|i| o.to_lowercase().contains(&i.to_lowercase())))
        .collect();
    if !excluded.is_empty() {
        if ids.len() > 1 {
            expr = format!("({expr})");
        }
        for e in excluded {
            expr.push_str(&format!(" and not {e}"));
        }
    }
    expr
}

/// The phase-7 command(s) for one table's rows.
fn command(file: &str, t: &TableRows, applies: Applies) -> Vec<String> {
    if applies == Applies::Converter {
        return vec![format!(
            "pytest {file} -k \"{}\" -v",
            t.rows.iter().find_map(|r| r.id.clone()).unwrap_or_default()
        )];
    }
    let ids: Vec<String> = t.rows.iter().filter_map(|r| r.id.clone()).collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let expr = k_expression(&ids, &t.other_ids);
    let tests: Vec<String> = if t.tests.is_empty() { vec![String::new()] } else { t.tests.clone() };
    tests
        .iter()
        .map(|f| {
            let target = if f.is_empty() { file.to_string() } else { format!("{file}::{f}") };
            format!("pytest {target} -k \"{expr}\" -v")
        })
        .collect()
}

/// What the project's ruff says of a planned file.
enum RuffVerdict {
    Accepts,
    Rejects(String),
    Unavailable(String),
}

/// Ruff changed or rejected the text with the rows: ours to answer for
/// only when the original passes.
fn ruff_verdict(
    ruff: &Ruff,
    result: Result<String, patchgen_core::normalize::RuffError>,
    original: &str,
    path: &Path,
) -> RuffVerdict {
    match ruff.normalize(original, path) {
        Ok(o) if o == original => RuffVerdict::Rejects(match result {
            Ok(_) => "the project's ruff would change more than the added lines: add the rows by hand".into(),
            Err(e) => format!("the project's ruff rejects the file with the rows added: {e}"),
        }),
        Ok(_) | Err(patchgen_core::normalize::RuffError::Rejected { .. }) => RuffVerdict::Accepts,
        Err(e) => RuffVerdict::Unavailable(e.to_string()),
    }
}

/// Write the planned files (each atomically).
pub fn write_all(rows: &TestRows) -> std::io::Result<()> {
    for f in &rows.files {
        patchgen_core::atomic::write(&f.path, &f.text)?;
    }
    Ok(())
}
