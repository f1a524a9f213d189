//! The converter test group (protocol phase 6, item 7) for a model `new`
//! wrote a checkpoint converter for, copied from the sibling's group in
//! the project's converter test file.
//!
//! The sibling's group is found structurally: the import of its
//! `checkpoint_tensor_converter` module, the module-level statements that
//! use a name imported there (its test classes), and the module-level
//! definitions those use, transitively (key and tensor helpers, the
//! `NUM_EXPERTS`/`HIDDEN`/`INTERMEDIATE` constants). The copy renames the
//! sibling's prefix and model name in identifiers (the converter class,
//! `create_<m>_checkpoint_tensor_converter`, the test classes) and gives the
//! group's other module-level names the new model's prefix, so the two
//! groups never rebind each other's helpers. It goes right after the
//! sibling's group; its import goes where isort puts it.
//!
//! Kept from the sibling as they are: the dims (the protocol's
//! pairwise-distinct rule is checked: hidden ≠ intermediate, hidden ≠
//! 2·intermediate) and every test, the ambiguous-layout checks included.
//! Marked `# TODO(patchgen new): …` where the sibling's test cannot hold
//! for the converter written: a name the written module does not define,
//! another constructor, other checkpoint keys (`w1/w3/w2`, a renaming like
//! `.block_sparse_moe.` → `.mlp.`), an error message `match=` the written
//! converter never raises, dims that are not pairwise distinct, and a
//! transposing converter's group without an ambiguous-layout check.

use std::collections::BTreeSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::copy::Source;
use super::find::{stmt_identifiers, str_value, strings};
use super::rename::ModelNames;
use super::{Planned, Request, RowCopy, SkipReason, TableRows, write};
use crate::moe::ConverterKind;
use patchgen_python::pysource::ParsedFile;
use patchgen_python::semantic::facts::{self, Loads};

/// The converter `new` wrote.
#[derive(Clone, Debug)]
pub struct Written<'a> {
    /// Its module text.
    pub text: &'a str,
    pub kind: ConverterKind,
    /// The recipe's plain renamings it applies to every key.
    pub renamings: Vec<(String, String)>,
}

/// Names a statement loads (function bodies included: a converter
/// group's functions need what they call).
fn loaded(stmt: &Stmt) -> BTreeSet<String> {
    facts::loaded_names(std::slice::from_ref(stmt), Loads::Anywhere).into_iter().collect()
}

/// The names a module-level statement defines (not imports).
fn defined(stmt: &Stmt) -> Vec<String> {
    match stmt {
        Stmt::FunctionDef(f) => vec![f.name.as_str().to_string()],
        Stmt::ClassDef(c) => vec![c.name.as_str().to_string()],
        Stmt::Assign(a) => a
            .targets
            .iter()
            .filter_map(|t| match t {
                Expr::Name(n) => Some(n.id.as_str().to_string()),
                _ => None,
            })
            .collect(),
        Stmt::AnnAssign(a) => match &*a.target {
            Expr::Name(n) => vec![n.id.as_str().to_string()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `from <...>.<dir>.checkpoint_tensor_converter import ...` of a model.
fn converter_import<'a>(body: &'a [Stmt], model: &ModelNames) -> Option<(usize, &'a ruff_python_ast::StmtImportFrom)> {
    body.iter().enumerate().find_map(|(i, s)| match s {
        Stmt::ImportFrom(f) => {
            let module = f.module.as_ref()?.as_str();
            let parts: Vec<&str> = module.split('.').collect();
            let n = parts.len();
            (n >= 2
                && parts[n - 1] == "checkpoint_tensor_converter"
                && (parts[n - 2] == model.dir || parts[n - 2] == model.hf))
                .then_some((i, f))
        }
        _ => None,
    })
}

/// The identifier renaming of the copied group.
struct Renames {
    from_prefix: String,
    to_prefix: String,
    from_hf: String,
    to_hf: String,
    /// The group's own module-level names that spell neither.
    own: Vec<String>,
}

impl Renames {
    fn rename(&self, ident: &str) -> Option<String> {
        if ident.contains(&self.from_prefix) {
            return Some(ident.replacen(&self.from_prefix, &self.to_prefix, 1));
        }
        if ident.contains(&self.from_hf) {
            return Some(ident.replacen(&self.from_hf, &self.to_hf, 1));
        }
        if self.own.iter().any(|o| o == ident) {
            let upper = ident.trim_start_matches('_').chars().all(|c| !c.is_lowercase());
            let lead = &ident[..ident.len() - ident.trim_start_matches('_').len()];
            let rest = ident.trim_start_matches('_');
            return Some(if upper {
                format!("{lead}{}_{rest}", self.to_hf.to_uppercase())
            } else {
                format!("{lead}{}_{rest}", self.to_hf)
            });
        }
        None
    }
}

fn apply(text: &str, base: usize, mut edits: Vec<(TextRange, String)>) -> String {
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start()));
    let mut s = text.to_string();
    for (r, t) in edits {
        let (a, b) = (usize::from(r.start()) - base, usize::from(r.end()) - base);
        s.replace_range(a..b, &t);
    }
    s
}

/// The top-level names a module defines.
fn module_defs(text: &str) -> Vec<String> {
    ruff_python_parser::parse_module(text)
        .map(|p| p.syntax().body.iter().flat_map(defined).collect())
        .unwrap_or_default()
}

/// `__init__`'s parameter names (without `self`) of a class in a module.
fn init_params(text: &str, class_suffix: &str) -> Option<Vec<String>> {
    let parsed = ruff_python_parser::parse_module(text).ok()?;
    parsed.syntax().body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.as_str().ends_with(class_suffix) => c.body.iter().find_map(|m| match m {
            Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(
                f.parameters
                    .iter_non_variadic_params()
                    .skip(1)
                    .map(|p| p.parameter.name.as_str().to_string())
                    .collect(),
            ),
            _ => None,
        }),
        _ => None,
    })
}

/// An int constant of the group whose name contains `word`.
fn dim(body: &[Stmt], group: &[usize], word: &str) -> Option<(String, i64)> {
    group.iter().find_map(|&i| match &body[i] {
        Stmt::Assign(a) => {
            let Expr::Name(n) = a.targets.first()? else { return None };
            let Expr::NumberLiteral(v) = &*a.value else { return None };
            let value = v.value.as_int()?.as_i64()?;
            n.id.as_str().contains(word).then(|| (n.id.as_str().to_string(), value))
        }
        _ => None,
    })
}

pub(crate) fn plan(
    req: &Request<'_>,
    src: Option<&Source<'_>>,
    file: &ParsedFile,
    donors: &[&ModelNames],
    rel: &str,
) -> Planned {
    let Some(written) = &req.converter else {
        return Planned::Skip(SkipReason::Category, "no checkpoint converter written".into());
    };
    let Some(src) = src else {
        return Planned::Skip(SkipReason::SharedLine, "not read".into());
    };
    let _ = rel;
    for donor in donors {
        if let Some(found) = find_group(req, file.body(), donor) {
            return copy_group(req, written, src, file, &found);
        }
    }
    let names: Vec<&str> = donors.iter().map(|d| d.hf.as_str()).collect();
    Planned::Skip(
        SkipReason::NoSiblingRow,
        format!("no converter test group for {}: no group written", names.join(" or ")),
    )
}

/// A sibling's converter test group, and how its copy renames.
struct Found<'a> {
    body: &'a [Stmt],
    donor: &'a ModelNames,
    /// The statement importing the sibling's converter module.
    import_at: usize,
    import: &'a ruff_python_ast::StmtImportFrom,
    /// The group's statements, in file order.
    group: Vec<usize>,
    renames: Renames,
}

/// `donor`'s group: the module-level statements that use a name imported
/// from its converter module, then what they use, transitively.
fn find_group<'a>(req: &Request<'_>, body: &'a [Stmt], donor: &'a ModelNames) -> Option<Found<'a>> {
    let (import_at, import) = converter_import(body, donor)?;
    let imported: BTreeSet<String> =
        import.names.iter().map(|a| a.asname.as_ref().unwrap_or(&a.name).as_str().to_string()).collect();
    let mut group: BTreeSet<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, s)| !matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_)))
        .filter(|(_, s)| loaded(s).iter().any(|n| imported.contains(n)))
        .map(|(i, _)| i)
        .collect();
    loop {
        let wanted: BTreeSet<String> = group.iter().flat_map(|&i| loaded(&body[i])).collect();
        let more: Vec<usize> = body
            .iter()
            .enumerate()
            .filter(|(i, s)| !group.contains(i) && defined(s).iter().any(|d| wanted.contains(d)))
            .map(|(i, _)| i)
            .collect();
        if more.is_empty() {
            break;
        }
        group.extend(more);
    }
    if group.is_empty() {
        return None;
    }
    let group: Vec<usize> = group.into_iter().collect();
    let own: Vec<String> = group
        .iter()
        .flat_map(|&i| defined(&body[i]))
        .filter(|n| !n.contains(&donor.prefix) && !n.contains(&donor.hf))
        .collect();
    let renames = Renames {
        from_prefix: donor.prefix.clone(),
        to_prefix: req.new.prefix.clone(),
        from_hf: donor.hf.clone(),
        to_hf: req.new.hf.clone(),
        own,
    };
    Some(Found { body, donor, import_at, import, group, renames })
}

/// The group copied for the new model after the sibling's, its import
/// where isort puts it, and the TODOs where a test cannot hold.
fn copy_group(
    req: &Request<'_>,
    written: &Written<'_>,
    src: &Source<'_>,
    file: &ParsedFile,
    found: &Found<'_>,
) -> Planned {
    let (new_import, new_module) = renamed_import(req, file, found);
    let mut todos = import_todos(found, written, &new_module);
    todos.extend(constructor_todo(req, written, found));
    todos.extend(key_todos(req, written, file, found));
    todos.extend(dims_todo(found));
    let text = group_text(req, src, file, found, &todos);
    let (body, donor) = (found.body, found.donor);
    let last = *found.group.last().unwrap_or(&0);
    let after = src.line_of(usize::from(body[last].range().end()));
    let import_before = import_line(src, found, &new_module);
    let import_text = format!("{new_import}\n");
    let insertions = vec![
        write::Insertion { before: import_before, text: import_text.clone(), owner: (0, 0, 1) },
        write::Insertion { before: after + 1, text: text.clone(), owner: (0, 1, 1) },
    ];
    let class_names: Vec<String> = found
        .group
        .iter()
        .filter_map(|&i| match &body[i] {
            Stmt::ClassDef(c) => found.renames.rename(c.name.as_str()),
            _ => None,
        })
        .collect();
    let id = class_names
        .iter()
        .map(|c| c.trim_start_matches("Test").to_string())
        .reduce(|a, b| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).map(|(x, _)| x).collect())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| req.new.prefix.clone());
    let table = TableRows {
        table: format!("the {} converter test group", donor.hf),
        after_line: after + 1,
        donor: donor.hf.clone(),
        rows: vec![
            RowCopy { id: None, text: import_text.clone(), todos: Vec::new(), resets: Vec::new() },
            RowCopy { id: Some(id), text, todos, resets: Vec::new() },
        ],
        tests: class_names,
        other_ids: Vec::new(),
    };
    Planned::Edit { insertions, tables: vec![table], donor: donor.hf.clone(), notes: Vec::new() }
}

/// The sibling's converter import with the names renamed and the model
/// directory replaced: the new import statement and module.
fn renamed_import(req: &Request<'_>, file: &ParsedFile, found: &Found<'_>) -> (String, String) {
    let import = found.import;
    let import_range = found.body[found.import_at].range();
    let import_edits: Vec<(TextRange, String)> = import
        .names
        .iter()
        .filter_map(|a| found.renames.rename(a.name.as_str()).map(|n| (a.name.range(), n)))
        .collect();
    let new_import = apply(&file.text[import_range], usize::from(import_range.start()), import_edits);
    let module = import.module.as_ref().map(|m| m.as_str()).unwrap_or_default();
    let new_module = {
        let mut parts: Vec<&str> = module.split('.').collect();
        let n = parts.len();
        parts[n - 2] = &req.new.hf;
        parts.join(".")
    };
    let new_import = new_import.replacen(module, &new_module, 1);
    (new_import, new_module)
}

/// The imported names the written converter does not define.
fn import_todos(found: &Found<'_>, written: &Written<'_>, new_module: &str) -> Vec<String> {
    let written_defs = module_defs(written.text);
    found
        .import
        .names
        .iter()
        .map(|a| found.renames.rename(a.name.as_str()).unwrap_or_else(|| a.name.as_str().to_string()))
        .filter(|name| !written_defs.contains(name))
        .map(|name| format!("`{name}` is not defined by the converter `new` wrote ({new_module})"))
        .collect()
}

/// The two converters' constructors, when they differ.
fn constructor_todo(req: &Request<'_>, written: &Written<'_>, found: &Found<'_>) -> Option<String> {
    let module = found.import.module.as_ref().map(|m| m.as_str()).unwrap_or_default();
    let donor_path = req.root.join(format!("{}.py", module.replace('.', "/")));
    let theirs = std::fs::read_to_string(&donor_path).ok().and_then(|t| init_params(&t, "CheckpointTensorConverter"));
    let ours = init_params(written.text, "CheckpointTensorConverter");
    match (&theirs, &ours) {
        (Some(t), Some(o)) if t != o => Some(format!(
            "{}'s converter takes ({}), {}'s takes ({}): adapt the constructor calls",
            found.donor.hf,
            t.join(", "),
            req.new.hf,
            o.join(", ")
        )),
        _ => None,
    }
}

/// The checkpoint keys and error messages the sibling's tests feed and
/// match, against what the written converter reads and raises.
fn key_todos(req: &Request<'_>, written: &Written<'_>, file: &ParsedFile, found: &Found<'_>) -> Vec<String> {
    let (body, group, donor) = (found.body, &found.group, found.donor);
    let mut todos = Vec::new();
    let group_strings: Vec<String> = group.iter().flat_map(|&i| strings_of_stmt(&body[i])).collect();
    let group_text: String = group.iter().map(|&i| &file.text[body[i].range()]).collect();
    let per_expert_theirs = group_text.contains("experts.{") || group_strings.iter().any(|s| s.contains(".experts.0."));
    match &written.kind {
        ConverterKind::PerExpert { gate, up, down } => {
            if !per_expert_theirs {
                todos.push(format!("{}'s tests feed fused checkpoint keys; {}'s converter stacks per-expert `experts.{{j}}.{gate}/{up}/{down}.weight` keys: adapt the keys", donor.hf, req.new.hf));
            } else if ![gate, up, down]
                .iter()
                .all(|p| group_strings.iter().any(|s| s == *p || s.contains(&format!(".{p}"))))
            {
                todos.push(format!("the checkpoint keys here are {}'s; {}'s converter reads `experts.{{j}}.{gate}/{up}/{down}.weight`: adapt the keys", donor.hf, req.new.hf));
            }
        }
        ConverterKind::Transposed => {
            if per_expert_theirs {
                todos.push(format!("{}'s tests feed per-expert keys; {}'s converter transposes fused `experts.gate_up_proj`/`down_proj`: adapt the keys and shapes", donor.hf, req.new.hf));
            }
            if !group_text.to_lowercase().contains("ambiguous") {
                todos.push(format!("add the ambiguous-layout checks: {}'s converter must raise for hidden == 2 * intermediate (gate/up) and hidden == intermediate (down)", req.new.hf));
            }
        }
    }
    for (a, b) in &written.renamings {
        todos.push(format!(
            "{}'s converter also renames `{a}` → `{b}`: feed a key with `{a}` and expect `{b}`",
            req.new.hf
        ));
    }
    for s in raises_matches(body, group) {
        if !written.text.contains(&s) {
            todos.push(format!(
                "`match=\"{s}\"` is {}'s message; {}'s converter does not raise it: adapt the match",
                donor.hf, req.new.hf
            ));
        }
    }
    todos
}

/// The protocol's pairwise-distinct dims (hidden ≠ intermediate, hidden ≠
/// 2·intermediate), when the group's constants break it.
fn dims_todo(found: &Found<'_>) -> Option<String> {
    match (dim(found.body, &found.group, "HIDDEN"), dim(found.body, &found.group, "INTERMEDIATE")) {
        (Some((_, h)), Some((_, i))) if h == i || i.checked_mul(2) == Some(h) => Some(format!(
            "the dims are not pairwise distinct (hidden {h}, intermediate {i}): overlapping dims hide dispatch bugs"
        )),
        _ => None,
    }
}

/// The copied group's text: a banner, the TODOs, then each statement
/// renamed with its leading comments.
fn group_text(req: &Request<'_>, src: &Source<'_>, file: &ParsedFile, found: &Found<'_>, todos: &[String]) -> String {
    let body = found.body;
    let mut text = String::new();
    text.push_str("\n\n# ---------------------------------------------------------------------------\n");
    text.push_str(&format!(
        "# Tests for {}CheckpointTensorConverter (copied from {}'s by `patchgen new`)\n",
        req.new.prefix, found.donor.hf
    ));
    text.push_str("# ---------------------------------------------------------------------------\n");
    for t in todos {
        text.push_str(&format!("# TODO(patchgen new): {t}\n"));
    }
    let mut prev: Option<usize> = None;
    for &i in &found.group {
        let s = &body[i];
        let r = s.range();
        let edits: Vec<(TextRange, String)> = stmt_identifiers(s, true)
            .into_iter()
            .filter_map(|(r, id)| found.renames.rename(&id).map(|n| (r, n)))
            .collect();
        let start = src.line_starts[src.line_of(usize::from(r.start()))];
        let stmt_text = apply(&file.text[start..usize::from(r.end())], start, edits);
        // Adjacent statements keep their spacing (constants stay
        // together); others get the two blank lines of top level.
        let blank = match prev {
            Some(p) if p + 1 == i => {
                let gap_from = src.line_of(usize::from(body[p].range().end()));
                let gap_to = src.line_of(usize::from(r.start()));
                (gap_from + 1..gap_to).filter(|l| !src.comment_lines.contains(l)).count().min(2)
            }
            _ => 2,
        };
        text.push_str(&"\n".repeat(blank));
        text.push_str(&stmt_text);
        text.push('\n');
        prev = Some(i);
    }
    text
}

/// The line the new import goes before, where isort puts it: the first
/// `from` import of the same package whose module sorts after it, else
/// the line after the sibling's import.
fn import_line(src: &Source<'_>, found: &Found<'_>, new_module: &str) -> usize {
    let import_range = found.body[found.import_at].range();
    found
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::ImportFrom(f) => Some((s, f.module.as_ref()?.as_str())),
            _ => None,
        })
        .filter(|(_, m)| m.split('.').next() == new_module.split('.').next())
        .find(|(_, m)| m.to_lowercase() > new_module.to_lowercase())
        .map(|(s, _)| src.line_of(usize::from(s.range().start())))
        .unwrap_or_else(|| src.line_of(usize::from(import_range.end())) + 1)
}

/// Every string literal in a statement.
fn strings_of_stmt(stmt: &Stmt) -> Vec<String> {
    struct V(Vec<String>);
    impl<'a> Visitor<'a> for V {
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.extend(strings(expr).into_iter().map(|(_, s)| s));
            // `strings` already walked it.
        }
    }
    let mut v = V(Vec::new());
    v.visit_stmt(stmt);
    v.0
}

/// The `match=` strings of `pytest.raises(...)` calls in the group.
fn raises_matches(body: &[Stmt], group: &[usize]) -> Vec<String> {
    struct V(Vec<String>);
    impl<'a> Visitor<'a> for V {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(c) = expr
                && matches!(&*c.func, Expr::Attribute(a) if a.attr.as_str() == "raises")
                && let Some(k) = c.arguments.find_keyword("match")
                && let Some(s) = str_value(&k.value)
            {
                self.0.push(s);
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V(Vec::new());
    for &i in group {
        v.visit_stmt(&body[i]);
    }
    v.0.sort();
    v.0.dedup();
    v.0
}
