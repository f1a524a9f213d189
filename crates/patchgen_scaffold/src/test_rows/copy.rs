//! One sibling row copied for the new model, in the table's own formatting:
//! the row's lines as written (trailing comments such as `# is_moe` kept,
//! comment lines inside the row dropped — they explain the sibling), with
//!
//! - every string naming the sibling renamed ([`super::rename`]);
//! - the `is_moe` slot set to the new model's category;
//! - a number where the table's other rows use a module-level name
//!   (`0.05` where they write `_DEFAULT_RTOL`) reset to that name;
//! - what still belongs to the sibling kept and marked with a
//!   `# TODO(patchgen new): …` line above it: a value other rows do not
//!   share (`max_sp_size` 2 where most rows say `None`), a name spelling the
//!   sibling (`marks=_qwen3_5_npu_skip`), an attention implementation the
//!   new model does not declare (`_supports_flash_attn`), a class the new
//!   module lacks, an id that is not the sibling's name (`llama3_1`).

use std::collections::BTreeMap;

use ruff_python_ast::{Expr, Number};
use ruff_text_size::{Ranged, TextRange};

use super::find::{Arg, IdSource, Row, SlotKey, Table, names, str_value, strings};
use super::rename::{Renamed, Renamer};

/// What the new model's upstream classes declare about attention backends
/// (`_supports_flash_attn = True` on any class of the module).
#[derive(Clone, Debug, Default)]
pub struct AttnSupport {
    pub flash: bool,
    pub sdpa: bool,
    pub flex: bool,
}

impl AttnSupport {
    /// The flag an `attn_implementation` value needs, when it is not declared.
    fn missing(&self, implementation: &str) -> Option<&'static str> {
        let (flag, ok) = match implementation {
            "flash_attention_2" | "flash_attention_3" => ("_supports_flash_attn", self.flash),
            "sdpa" => ("_supports_sdpa", self.sdpa),
            "flex_attention" => ("_supports_flex_attn", self.flex),
            _ => return None,
        };
        (!ok).then_some(flag)
    }

    /// Read from the module's class bodies.
    pub fn of_module(body: &[ruff_python_ast::Stmt]) -> AttnSupport {
        let mut out = AttnSupport::default();
        for s in body {
            let ruff_python_ast::Stmt::ClassDef(c) = s else { continue };
            for st in &c.body {
                let ruff_python_ast::Stmt::Assign(a) = st else { continue };
                let Expr::BooleanLiteral(b) = &*a.value else { continue };
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        match n.id.as_str() {
                            "_supports_flash_attn" | "_supports_flash_attn_2" => out.flash |= b.value,
                            "_supports_sdpa" => out.sdpa |= b.value,
                            "_supports_flex_attn" => out.flex |= b.value,
                            _ => {}
                        }
                    }
                }
            }
        }
        out
    }
}

/// The file a row is copied in.
pub struct Source<'a> {
    pub text: &'a str,
    /// Byte offset of each line start.
    pub line_starts: &'a [usize],
    /// 0-based lines holding nothing but a comment.
    pub comment_lines: &'a std::collections::HashSet<usize>,
    /// Names bound at module level.
    pub module_names: &'a [String],
}

impl Source<'_> {
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }
    fn line_text(&self, line: usize) -> &str {
        let end = self.line_starts.get(line + 1).copied().unwrap_or(self.text.len());
        self.text[self.line_starts[line]..end].trim_end_matches(['\n', '\r'])
    }
    fn indent(&self, line: usize) -> &str {
        let l = self.line_text(line);
        &l[..l.len() - l.trim_start().len()]
    }
}

/// The lines a row occupies: first and last (0-based), and whether a comma follows it.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub first: usize,
    pub last: usize,
    pub comma: bool,
}

/// Why a row cannot be copied line by line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// Another row or code shares one of its lines.
    SharedLine { line: usize },
}

/// The lines of a row, when it has lines of its own.
pub fn span(src: &Source<'_>, range: TextRange) -> Result<Span, Unsupported> {
    let start = usize::from(range.start());
    let end = usize::from(range.end());
    let first = src.line_of(start);
    if !src.text[src.line_starts[first]..start].trim().is_empty() {
        return Err(Unsupported::SharedLine { line: first + 1 });
    }
    // After the row: whitespace, then a comma or the end of the display.
    let rest = &src.text[end..];
    let after = rest.trim_start_matches([' ', '\t']);
    let comma = after.starts_with(',');
    let tail_at = end + (rest.len() - after.len()) + usize::from(comma);
    let last = src.line_of(if comma { tail_at - 1 } else { end.saturating_sub(1).max(start) });
    let line_end = src.line_starts.get(last + 1).copied().unwrap_or(src.text.len());
    let tail = src.text[tail_at.min(line_end)..line_end].trim();
    if !(tail.is_empty() || tail.starts_with('#')) {
        return Err(Unsupported::SharedLine { line: last + 1 });
    }
    Ok(Span { first, last, comma })
}

/// A copied row.
#[derive(Clone, Debug, Default)]
pub struct Copied {
    /// The row's text (lines with `\n`, a trailing comma).
    pub text: String,
    /// Its pytest id (or the part of the generated one `-k` can use).
    pub id: Option<String>,
    pub todos: Vec<String>,
    /// Values reset to the table's defaults (`rtol: 0.05 → _DEFAULT_RTOL`).
    pub resets: Vec<String>,
    /// Comment lines of the sibling's row left out.
    pub dropped_comments: usize,
}

/// What the copy needs to know besides the row.
pub struct Context<'a> {
    pub src: &'a Source<'a>,
    pub table: &'a Table<'a>,
    /// Indices of the rows copied (left out of the table's defaults).
    pub donor_rows: &'a [usize],
    pub renamer: &'a Renamer<'a>,
    pub new_is_moe: bool,
    pub attn: &'a AttnSupport,
}

fn is_number(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(n) => matches!(n.value, Number::Int(_) | Number::Float(_)),
        Expr::UnaryOp(u) => matches!(&*u.operand, Expr::NumberLiteral(_)),
        _ => false,
    }
}

fn slot_name(key: &SlotKey, slots: &[String]) -> String {
    match key {
        SlotKey::Kw(k) => k.clone(),
        SlotKey::Pos(i) => slots.get(*i).cloned().unwrap_or_else(|| format!("argument {}", i + 1)),
    }
}

impl Context<'_> {
    fn text(&self, r: TextRange) -> &str {
        &self.src.text[r]
    }

    /// The values the other rows hold in a slot (source text).
    fn others(&self, key: &SlotKey) -> Vec<(&str, &Expr)> {
        self.table
            .rows
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.donor_rows.contains(i))
            .filter_map(|(_, r)| r.args.iter().find(|a| a.key == *key))
            .map(|a| (self.text(a.value.range()), a.value))
            .collect()
    }

    /// The module-level name most other rows use in this slot.
    fn default_name(&self, key: &SlotKey) -> Option<String> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, v) in self.others(key) {
            if let Expr::Name(n) = v
                && self.src.module_names.iter().any(|m| m == n.id.as_str())
            {
                *counts.entry(n.id.as_str()).or_default() += 1;
            }
        }
        counts.into_iter().max_by_key(|(_, c)| *c).map(|(n, _)| n.to_string())
    }

    /// The value a strict majority of the other rows holding the slot share.
    fn majority(&self, key: &SlotKey) -> Option<String> {
        let others = self.others(key);
        let total = self.table.rows.len() - self.donor_rows.len();
        if others.len() < 2 || others.len() * 2 <= total {
            return None;
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (t, _) in &others {
            *counts.entry(t).or_default() += 1;
        }
        let (text, n) = counts.into_iter().max_by_key(|(_, c)| *c)?;
        (n * 2 > others.len()).then(|| text.to_string())
    }

    fn is_moe_slot(&self, arg: &Arg<'_>) -> bool {
        if slot_name(&arg.key, &self.table.slots) == "is_moe" {
            return true;
        }
        // `False,  # is_moe`
        let line = self.src.line_of(usize::from(arg.value.range().end()));
        self.src.line_text(line).split_once('#').is_some_and(|(_, c)| c.trim() == "is_moe")
    }

    /// The row copied for the new model.
    pub fn copy(&self, row: &Row<'_>, span: Span) -> Copied {
        let mut out = Copied::default();
        let mut edits: Vec<(TextRange, String)> = Vec::new();
        // TODOs keyed by the 0-based line they go above.
        let mut todos: Vec<(usize, String)> = Vec::new();
        let sibling = self.renamer.from.hf.clone();
        let new = self.renamer.to.hf.clone();
        let line_of = |r: TextRange| {
            let l = self.src.line_of(usize::from(r.start()));
            if l == span.first { span.first } else { l }
        };
        // Strings naming the sibling; attention implementations.
        for (r, s) in strings(row.expr) {
            if let Some((renamed, kind)) = self.renamer.rename(&s) {
                let quoted = self.text(r);
                let q = &quoted[..quoted.len() - quoted.trim_start_matches(|c: char| c.is_alphabetic()).len()];
                let body = &quoted[q.len()..];
                let delim = &body[..1];
                edits.push((r, format!("{q}{delim}{renamed}{delim}")));
                if kind == (Renamed::Class { exists: false }) {
                    todos.push((
                        line_of(r),
                        format!(
                            "the new module has no `{renamed}` (renamed from the sibling's `{s}`): confirm the class"
                        ),
                    ));
                }
            } else if let Some(flag) = self.attn.missing(&s) {
                todos.push((
                    line_of(r),
                    format!("{new}'s upstream classes do not set `{flag} = True`: `{s}` is {sibling}'s backend, confirm or drop this row"),
                ));
            }
        }
        let id = row.id(self.table);
        for arg in &row.args {
            let key_name = slot_name(&arg.key, &self.table.slots);
            let at = line_of(arg.value.range());
            if str_value(arg.value).is_some() {
                continue;
            }
            if self.is_moe_slot(arg) {
                if let Expr::BooleanLiteral(b) = arg.value
                    && b.value != self.new_is_moe
                {
                    edits.push((arg.value.range(), if self.new_is_moe { "True" } else { "False" }.into()));
                }
                continue;
            }
            let value = self.text(arg.value.range()).to_string();
            let sibling_names: Vec<String> = names(arg.value)
                .into_iter()
                .filter(|(_, n)| self.renamer.identifier_mentions(n))
                .map(|(_, n)| n)
                .collect();
            if !sibling_names.is_empty() {
                todos.push((at, format!("`{key_name}={value}` is {sibling}'s: confirm it applies to {new}")));
                continue;
            }
            if is_number(arg.value)
                && let Some(default) = self.default_name(&arg.key)
            {
                out.resets.push(format!("{key_name}: {value} → {default}"));
                edits.push((arg.value.range(), default));
                continue;
            }
            if let Some(common) = self.majority(&arg.key)
                && common != value
            {
                todos.push((
                    at,
                    format!("`{key_name}` is {value} as for {sibling} (most rows: {common}): confirm it for {new}"),
                ));
            }
        }
        // An id that does not name the sibling would be copied as is.
        if let Some((arg, old)) = &id
            && self.renamer.rename(old).is_none()
        {
            let r = arg.value.range();
            let quoted = self.text(r);
            let delim = &quoted[quoted.len() - 1..];
            edits.retain(|(e, _)| *e != r);
            edits.push((r, format!("{delim}{new}{delim}")));
            todos.push((
                line_of(r),
                format!("{sibling}'s id here is `{old}`, not its model name: `{new}` written, rename it to the table's convention"),
            ));
        }
        out.id = id.map(|(arg, old)| {
            edits
                .iter()
                .find(|(r, _)| *r == arg.value.range())
                .map(|(_, t)| t.trim_matches(|c| c == '"' || c == '\'').to_string())
                .unwrap_or(old)
        });
        // Assemble: line by line, edits applied, comment lines dropped,
        // TODOs above their line.
        if !span.comma {
            // The last row of a display without a trailing comma.
            edits.push((TextRange::empty(row.range().end()), ",".into()));
        }
        edits.sort_by_key(|(r, _)| r.start());
        let mut text = String::new();
        for line in span.first..=span.last {
            if line != span.first && self.src.comment_lines.contains(&line) {
                out.dropped_comments += 1;
                continue;
            }
            for (_, t) in todos.iter().filter(|(l, _)| *l == line) {
                text.push_str(self.src.indent(line));
                text.push_str("# TODO(patchgen new): ");
                text.push_str(t);
                text.push('\n');
            }
            let start = self.src.line_starts[line];
            let mut s = self.src.line_text(line).to_string();
            let len = s.len();
            for (r, new_text) in edits.iter().rev() {
                let (a, b) = (usize::from(r.start()), usize::from(r.end()));
                if a >= start && b <= start + len && self.src.line_of(a) == line {
                    s.replace_range(a - start..b - start, new_text);
                }
            }
            text.push_str(&s);
            text.push('\n');
        }
        out.todos = todos.into_iter().map(|(_, t)| t).collect();
        out.text = text;
        out
    }
}

/// Whether a table's id source names rows by a field.
pub fn field_ids(table: &Table<'_>) -> bool {
    matches!(table.id_source, IdSource::Field { .. })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rows::find;
    use crate::test_rows::rename::ModelNames;

    fn names(hf: &str, prefix: &str, classes: &[&str]) -> ModelNames {
        ModelNames {
            hf: hf.into(),
            dir: hf.into(),
            prefix: prefix.into(),
            keys: vec![hf.into()],
            toy_dirs: vec![format!("{hf}_toy")],
            classes: classes.iter().map(|c| c.to_string()).collect(),
        }
    }

    /// The copy of the rows of `table` naming `from`, for `to`.
    fn copy_rows(src_text: &str, attn: AttnSupport, to_classes: &[&str]) -> Vec<Copied> {
        let parsed = ruff_python_parser::parse_module(src_text).unwrap();
        let mut line_starts = vec![0];
        line_starts.extend(src_text.match_indices('\n').map(|(i, _)| i + 1));
        let comment_lines: std::collections::HashSet<usize> =
            src_text.lines().enumerate().filter(|(_, l)| l.trim_start().starts_with('#')).map(|(i, _)| i).collect();
        let module_names = find::module_names(&parsed.syntax().body);
        let src = Source {
            text: src_text,
            line_starts: &line_starts,
            comment_lines: &comment_lines,
            module_names: &module_names,
        };
        let tables = find::tables(&parsed.syntax().body);
        let from = names("qwen3", "Qwen3", &["Qwen3ForCausalLM"]);
        let to = names("olmo3", "Olmo3", to_classes);
        let renamer = Renamer::new(&from, &to, vec![]);
        let table = &tables[0];
        let rows: Vec<usize> = table
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| strings(r.expr).iter().any(|(_, s)| renamer.mentions(s)))
            .map(|(i, _)| i)
            .collect();
        let cx = Context { src: &src, table, donor_rows: &rows, renamer: &renamer, new_is_moe: true, attn: &attn };
        rows.iter().map(|&i| cx.copy(&table.rows[i], span(&src, table.rows[i].range()).unwrap())).collect()
    }

    const TABLE: &str = r#"import pytest

_RTOL = 1e-2

T = [
    pytest.param("./t/a_toy", False, _RTOL, 4, "x", id="a"),
    pytest.param("./t/b_toy", False, _RTOL, 4, "x", id="b"),
    pytest.param(
        "./t/qwen3_toy",
        False,  # is_moe
        # qwen3 is noisier
        0.5,
        8,
        "Qwen3ForCausalLM",
        "flash_attention_2",
        id="qwen3",
    ),
]


@pytest.mark.parametrize("path, is_moe, rtol, n, arch, attn", T)
def test(path, is_moe, rtol, n, arch, attn): ...
"#;

    #[test]
    fn resets_renames_and_marks_what_is_the_siblings() {
        let c = &copy_rows(TABLE, AttnSupport::default(), &[])[0];
        assert_eq!(c.id.as_deref(), Some("olmo3"));
        assert_eq!(c.resets, ["rtol: 0.5 → _RTOL"]);
        assert_eq!(c.dropped_comments, 1);
        assert!(c.text.contains("        \"./t/olmo3_toy\",\n        True,  # is_moe\n        _RTOL,\n"), "{}", c.text);
        let todos = c.todos.join("\n");
        assert!(todos.contains("`n` is 8 as for qwen3 (most rows: 4)"), "{todos}");
        assert!(todos.contains("the new module has no `Olmo3ForCausalLM`"), "{todos}");
        assert!(todos.contains("`_supports_flash_attn = True`"), "{todos}");
        // Each TODO sits on its own line above the value, indented like it.
        assert!(c.text.contains("        # TODO(patchgen new): `n` is 8"), "{}", c.text);
        let supported = AttnSupport { flash: true, sdpa: true, flex: true };
        let c = &copy_rows(TABLE, supported, &["Olmo3ForCausalLM"])[0];
        assert_eq!(c.todos.len(), 1, "{:?}", c.todos);
    }
}
