//! Fixes, as ruff applies them: a rule offers a [`Fix`] (its
//! [`Applicability`], a message, [`Edit`]s of project files, positions in
//! lines and characters) on the finding; `patchgen lint --fix` applies the
//! safe ones (`--unsafe-fixes` the unsafe ones too), `--diff` shows what it
//! would write, `--add-noqa` writes `# noqa: CODE` on every finding's line.
//!
//! - Rules compute byte-range edits of a text ([`TextEdit`], [`apply`]) and
//!   turn them into a fix of a file with [`of_text`].
//! - One round ([`apply_round`]) applies, per file, every selected fix
//!   whose edits overlap no fix already taken (the others wait for the next
//!   round, as ruff's do); a fix identical to one taken counts as applied.
//! - The run ([`run`]) works on an overlay of the project files (what an
//!   editor's unsaved buffers are to [`crate::lint_buffers`]): lint, apply a
//!   round, lint the fixed texts again, until no selected fix is left or
//!   [`MAX_ROUNDS`] rounds ran. A config that evaluated and generated
//!   before and no longer does (or whose generated code ruff now rejects)
//!   gets the files it read back as they were, reported in
//!   [`FixOutcome::reverted`]. Only then, and not with `--diff`, files are
//!   written, each atomically (a temporary file renamed over it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ruff_text_size::TextRange;
use serde::{Deserialize, Serialize};

use super::run::{LintReport, Options, lint_buffers};
use patchgen_config::Overlay;
use patchgen_core::error::RunError;
use patchgen_diagnostics::Diagnostic;
pub use patchgen_diagnostics::fix::{Applicability, Edit, EditError, Fix, Position};

/// A text edit by byte range: `range` of the text replaced by `content`
/// (an empty range inserts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub range: TextRange,
    pub content: String,
}

/// `text` with `edits` applied (ranges into `text`, not overlapping).
pub fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start(), e.range.end()));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0usize;
    for e in sorted {
        let (start, end) = (usize::from(e.range.start()), usize::from(e.range.end()));
        out.push_str(&text[at..start]);
        out.push_str(&e.content);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// A fix of the file `path` whose text is `text`, from byte-range edits.
pub fn of_text(
    applicability: Applicability,
    message: impl Into<String>,
    path: &Path,
    text: &str,
    edits: &[TextEdit],
) -> Fix {
    let position = |offset: usize| patchgen_diagnostics::fix::position(text, offset);
    Fix {
        applicability,
        message: message.into(),
        edits: edits
            .iter()
            .map(|e| Edit {
                path: path.to_path_buf(),
                start: position(e.range.start().to_usize()),
                end: position(e.range.end().to_usize()),
                content: e.content.clone(),
            })
            .collect(),
    }
}

/// The fixes a run applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Selection {
    /// `--fix`: safe fixes.
    Safe,
    /// `--fix --unsafe-fixes`: safe and unsafe fixes.
    SafeAndUnsafe,
}

impl Selection {
    pub fn new(unsafe_fixes: bool) -> Selection {
        if unsafe_fixes { Selection::SafeAndUnsafe } else { Selection::Safe }
    }

    pub fn admits(self, a: Applicability) -> bool {
        match a {
            Applicability::Safe => true,
            Applicability::Unsafe => self == Selection::SafeAndUnsafe,
            Applicability::DisplayOnly => false,
        }
    }
}

/// What a fixing run does with the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// `--fix`: write the fixed files.
    Write,
    /// `--diff`: print the unified diff of each file, write nothing.
    Diff,
    /// `--add-noqa`: write `# noqa: CODE` on each finding's line.
    AddNoqa,
}

/// A file a fixing run changed (or, with `--diff`, would change).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedFile {
    pub path: PathBuf,
    /// The unified diff from the file to its fixed text.
    pub diff: String,
}

/// A file a fixing run left as it was: fixed, a config reading it no
/// longer evaluates or generates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reverted {
    pub path: PathBuf,
    /// The config that broke.
    pub config: String,
    /// What broke it: the failure's first line.
    pub reason: String,
}

/// One fix a run applied: its rule and where its first edit starts (the
/// line in the text the fix was made on).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedFix {
    pub code: String,
    pub path: PathBuf,
    /// 1-based.
    pub line: usize,
}

/// What `--fix`, `--diff` or `--add-noqa` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixOutcome {
    pub mode: Mode,
    pub selection: Selection,
    /// Fixes applied (`--diff`: that would be; `--add-noqa`: directives added).
    pub fixed: usize,
    /// Rounds of fix-then-lint that ran.
    pub rounds: usize,
    pub files: Vec<FixedFile>,
    pub reverted: Vec<Reverted>,
    /// The fixes applied, in order, in the files kept (not with `--add-noqa`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub applied: Vec<AppliedFix>,
}

/// Whether a rule offers fixes: what its documentation says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Availability {
    /// The rule offers none.
    Never,
    /// Where the edit is unambiguous, with this applicability.
    Sometimes(Applicability),
}

impl Availability {
    /// The documentation's words: `sometimes available (safe)`.
    pub fn describe(self) -> String {
        match self {
            Availability::Never => "none".to_string(),
            Availability::Sometimes(a) => format!("sometimes available ({})", a.as_str()),
        }
    }
}

/// The fixes rule `code` offers.
pub fn availability(code: &str) -> Availability {
    use Applicability::{Safe, Unsafe};
    match code {
        "PG101" | "PG106" | "PG108" | "PG306" => Availability::Sometimes(Unsafe),
        "PG107" | "PG301" | "PG303" => Availability::Sometimes(Safe),
        _ => Availability::Never,
    }
}

/// Fix-then-lint rounds at most: a fix that creates the finding it fixes
/// must not loop forever (ruff stops at 100; our fixes converge in two).
pub const MAX_ROUNDS: usize = 10;

/// The findings whose fixes `selection` admits.
pub fn selected(diagnostics: &[Diagnostic], selection: Selection) -> impl Iterator<Item = &Fix> {
    diagnostics.iter().filter_map(|d| d.the_fix()).filter(move |f| selection.admits(f.applicability))
}

/// Fixes not applied because of their applicability (ruff's "hidden"
/// fixes: unsafe ones without `--unsafe-fixes`).
pub fn hidden(diagnostics: &[Diagnostic], selection: Selection) -> usize {
    diagnostics
        .iter()
        .filter_map(|d| d.the_fix())
        .filter(|f| f.applicability == Applicability::Unsafe && !selection.admits(f.applicability))
        .count()
}

/// One round: every fix of `fixes` that overlaps no fix taken before it
/// applied to `texts` (path → current text; `read` gives the text of a
/// file not in it yet). A fix whose file cannot be read, or whose edits
/// fall outside it, is skipped. Returns the fixes applied.
pub fn apply_round<'f>(
    fixes: impl IntoIterator<Item = &'f Fix>,
    texts: &mut BTreeMap<PathBuf, String>,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<&'f Fix> {
    // Per file: the byte ranges taken and their edits.
    let mut taken: BTreeMap<PathBuf, Vec<(usize, usize, &Edit)>> = BTreeMap::new();
    let mut applied = Vec::new();
    'fixes: for fix in fixes {
        let mut spans: Vec<(PathBuf, usize, usize, &Edit)> = Vec::new();
        for e in &fix.edits {
            if !texts.contains_key(&e.path) {
                match read(&e.path) {
                    Some(t) => {
                        texts.insert(e.path.clone(), t);
                    }
                    None => continue 'fixes,
                }
            }
            let text = &texts[&e.path];
            let (Some(s), Some(t)) =
                (patchgen_diagnostics::fix::offset(text, e.start), patchgen_diagnostics::fix::offset(text, e.end))
            else {
                continue 'fixes;
            };
            let already = taken.get(&e.path).map(Vec::as_slice).unwrap_or_default();
            // The same edit, offered by another finding: already made.
            if already.iter().any(|&(a, b, other)| a == s && b == t && other == e) {
                continue;
            }
            let clash = |a: usize, b: usize| (s < b && a < t) || a == s;
            if t < s
                || already.iter().any(|&(a, b, _)| clash(a, b))
                || spans.iter().any(|(p, a, b, _)| *p == e.path && clash(*a, *b))
            {
                continue 'fixes;
            }
            spans.push((e.path.clone(), s, t, e));
        }
        for (path, s, t, e) in spans {
            taken.entry(path).or_default().push((s, t, e));
        }
        applied.push(fix);
    }
    for (path, edits) in taken {
        let text = texts.get_mut(&path).expect("read above");
        let edits: Vec<TextEdit> = edits
            .into_iter()
            .map(|(s, t, e)| TextEdit {
                range: TextRange::new((s as u32).into(), (t as u32).into()),
                content: e.content.clone(),
            })
            .collect();
        *text = apply(text, &edits);
    }
    applied
}

/// `# noqa: CODE` edits: one per finding located on a line of a file
/// (codes of one line joined into its comment), none where the line
/// already suppresses the code.
pub fn noqa_texts(
    diagnostics: &[Diagnostic],
    read: &dyn Fn(&Path) -> Option<String>,
) -> (BTreeMap<PathBuf, String>, usize) {
    let mut by_line: BTreeMap<(PathBuf, usize), Vec<&str>> = BTreeMap::new();
    for d in diagnostics {
        let Some(loc) = &d.location else { continue };
        if loc.line == 0 {
            continue;
        }
        let codes = by_line.entry((loc.path.clone(), loc.line)).or_default();
        if !codes.contains(&d.code.as_str()) {
            codes.push(&d.code);
        }
    }
    let mut texts: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut added = 0;
    for ((path, line), codes) in by_line {
        if !texts.contains_key(&path) {
            let Some(t) = read(&path) else { continue };
            texts.insert(path.clone(), t);
        }
        let text = texts.get_mut(&path).expect("inserted");
        let Some(start) = patchgen_diagnostics::fix::offset(text, Position { line, column: 1 }) else { continue };
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let mut content = text[start..end].to_string();
        let cr = content.ends_with('\r');
        if cr {
            content.pop();
        }
        for code in codes {
            if let Some((at, insert)) = super::noqa::addition(&content, code) {
                content.insert_str(at, &insert);
                added += 1;
            }
        }
        if cr {
            content.push('\r');
        }
        text.replace_range(start..end, &content);
    }
    (texts, added)
}

/// The unified diff from `old` to `new` of the file `path` (`a/`, `b/`
/// labels relative to `root`).
pub fn unified_diff(path: &Path, root: &Path, old: &str, new: &str) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path).display().to_string();
    let a = patchgen_python::pytext::splitlines_keepends(old);
    let b = patchgen_python::pytext::splitlines_keepends(new);
    patchgen_python::diff::unified_diff(&a, &b, &format!("a/{rel}"), &format!("b/{rel}"), 3)
}

/// `patchgen lint --fix | --diff | --add-noqa`: lint `args`, apply the
/// fixes `selection` admits round after round (or add the `noqa`
/// directives), check that every config still evaluates and generates,
/// and write the files (not with [`Mode::Diff`]). The report is the lint
/// of the result, with the [`FixOutcome`].
pub fn run(args: &Options, cwd: &Path, mode: Mode, selection: Selection) -> Result<LintReport, RunError> {
    let mut args = args.clone();
    args.jobs = Some(args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())));
    let lint = |modules: Option<&[String]>, texts: &BTreeMap<PathBuf, String>, with_ruff: bool| {
        let mut overlay = Overlay::default();
        for (p, t) in texts {
            overlay.insert(p.clone(), t.as_str());
        }
        let mut args = args.clone();
        if let Some(m) = modules {
            args.modules = m.to_vec();
        }
        lint_buffers(&args, cwd, overlay, with_ruff)
    };
    let none = BTreeMap::new();
    let disk = |p: &Path| std::fs::read_to_string(p).ok();
    let mut report = lint(None, &none, false)?.report;
    let broken_before: BTreeSet<String> = report.errors.iter().filter_map(|e| e.config.clone()).collect();
    let mut texts: BTreeMap<PathBuf, String> = BTreeMap::new();
    // Fixes applied, by the file of their first edit.
    let mut fixed_in: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut applied_fixes: Vec<AppliedFix> = Vec::new();
    let mut rounds = 0;
    let mut noqa_added = 0;
    let first = (mode == Mode::Diff).then(|| report.clone());
    if mode == Mode::AddNoqa {
        (texts, noqa_added) = noqa_texts(&report.diagnostics, &disk);
    } else {
        while rounds < MAX_ROUNDS {
            let coded: Vec<(&str, &Fix)> = report
                .diagnostics
                .iter()
                .filter_map(|d| Some((d.code.as_str(), d.the_fix().filter(|f| selection.admits(f.applicability))?)))
                .collect();
            if coded.is_empty() {
                break;
            }
            let before = texts.clone();
            let applied = apply_round(coded.iter().map(|&(_, f)| f), &mut texts, &disk);
            rounds += 1;
            if texts == before {
                break;
            }
            for f in applied {
                if let Some(e) = f.edits.first() {
                    *fixed_in.entry(e.path.clone()).or_default() += 1;
                    let code = coded.iter().find(|&&(_, c)| std::ptr::eq(c, f)).map_or("", |&(c, _)| c);
                    applied_fixes.push(AppliedFix { code: code.to_string(), path: e.path.clone(), line: e.start.line });
                }
            }
            report = lint(None, &texts, false)?.report;
        }
    }
    texts.retain(|p, t| disk(p).as_deref() != Some(t.as_str()));
    let mut reverted = Vec::new();
    if !texts.is_empty() {
        // Every config that evaluated and generated before still does, and
        // ruff accepts what it generates where it did.
        let ruff_before: BTreeSet<String> =
            lint(None, &none, true)?.generation.iter().filter_map(ruff_rejection).collect();
        loop {
            let checked = lint(None, &texts, true)?;
            let broken: Vec<(String, String)> = checked
                .report
                .errors
                .iter()
                .filter(|e| e.config.as_ref().is_some_and(|c| !broken_before.contains(c)))
                .chain(
                    checked.generation.iter().filter(|g| ruff_rejection(g).is_some_and(|c| !ruff_before.contains(&c))),
                )
                .filter_map(|e| Some((e.config.clone()?, e.message.lines().next().unwrap_or_default().to_string())))
                .collect();
            if broken.is_empty() {
                report = checked.report;
                break;
            }
            for (config, reason) in broken {
                // The files this config reads, as fixed.
                let read =
                    lint(Some(std::slice::from_ref(&config)), &texts, false).map(|b| b.files).unwrap_or_default();
                let back: Vec<PathBuf> =
                    texts.keys().filter(|p| read.is_empty() || read.iter().any(|r| same_file(r, p))).cloned().collect();
                for path in back {
                    texts.remove(&path);
                    reverted.push(Reverted { path, config: config.clone(), reason: reason.clone() });
                }
            }
        }
    }
    let root = project_root(cwd);
    let files: Vec<FixedFile> = texts
        .iter()
        .map(|(p, t)| FixedFile { path: p.clone(), diff: unified_diff(p, &root, &disk(p).unwrap_or_default(), t) })
        .collect();
    let fixed = match mode {
        Mode::AddNoqa if reverted.is_empty() => noqa_added,
        _ => fixed_in.iter().filter(|(p, _)| texts.contains_key(*p)).map(|(_, n)| n).sum(),
    };
    match first {
        // Nothing is written: the findings are those of the files on disk.
        Some(first) => report = first,
        None => {
            for (path, text) in &texts {
                patchgen_core::atomic::write(path, text)
                    .map_err(|e| RunError::failed(format!("{}: cannot write the fixed file: {e}", path.display())))?;
            }
        }
    }
    applied_fixes.retain(|f| texts.contains_key(&f.path));
    let applied = applied_fixes;
    report.fixed = Some(FixOutcome { mode, selection, fixed, rounds, files, reverted, applied });
    report.unsafe_fixes = args.unsafe_fixes;
    Ok(report)
}

/// A generation note that is ruff rejecting a config's generated code: the config.
fn ruff_rejection(d: &Diagnostic) -> Option<String> {
    d.code.starts_with("PGE").then(|| d.config.clone()).flatten()
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || patchgen_core::project::resolve(a) == patchgen_core::project::resolve(b)
}

/// The project root, for diff labels: the nearest directory above `cwd`
/// holding a `pyproject.toml`.
fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|d| d.join("pyproject.toml").is_file()).unwrap_or(cwd).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (path, start, end, content) of one edit.
    type EditSpec<'a> = (&'a str, (usize, usize), (usize, usize), &'a str);

    fn fix(a: Applicability, edits: &[EditSpec<'_>]) -> Fix {
        Fix {
            applicability: a,
            message: "m".into(),
            edits: edits
                .iter()
                .map(|&(p, s, e, c)| Edit {
                    path: p.into(),
                    start: Position { line: s.0, column: s.1 },
                    end: Position { line: e.0, column: e.1 },
                    content: c.into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_round_takes_fixes_that_do_not_overlap() {
        let files = BTreeMap::from([(PathBuf::from("a.py"), "x = 1\ny = 2\n".to_string())]);
        let read = |p: &Path| files.get(p).cloned();
        let one = fix(Applicability::Safe, &[("a.py", (1, 5), (1, 6), "10")]);
        let same = one.clone();
        let overlapping = fix(Applicability::Safe, &[("a.py", (1, 1), (1, 6), "z = 3")]);
        let other = fix(Applicability::Safe, &[("a.py", (2, 5), (2, 6), "20"), ("a.py", (3, 1), (3, 1), "# end\n")]);
        let mut texts = BTreeMap::new();
        let n = apply_round([&one, &same, &overlapping, &other], &mut texts, &read).len();
        assert_eq!(n, 3);
        assert_eq!(texts[Path::new("a.py")], "x = 10\ny = 20\n# end\n");
        // The overlapping fix waits for the next round (on the new text).
        let n = apply_round([&overlapping], &mut texts, &read).len();
        assert_eq!((n, texts[Path::new("a.py")].as_str()), (1, "z = 30\ny = 20\n# end\n"));
    }

    #[test]
    fn selection_and_hidden_fixes() {
        assert!(Selection::Safe.admits(Applicability::Safe));
        assert!(!Selection::Safe.admits(Applicability::Unsafe));
        assert!(Selection::SafeAndUnsafe.admits(Applicability::Unsafe));
        assert!(!Selection::SafeAndUnsafe.admits(Applicability::DisplayOnly));
    }

    #[test]
    fn noqa_directives_join_the_codes_of_a_line() {
        let files =
            BTreeMap::from([(PathBuf::from("c.py"), "a = 1\nb = 2  # noqa: F821\r\nc = 3  # noqa\n".to_string())]);
        let read = |p: &Path| files.get(p).cloned();
        let d = |code: &str, line: usize| {
            patchgen_diagnostics::Diagnostic::new(code, "n", patchgen_diagnostics::Severity::Error, "m")
                .at(patchgen_diagnostics::Location::line("c.py", line))
        };
        let (texts, added) = noqa_texts(&[d("PG101", 1), d("PG203", 1), d("PG101", 2), d("PG101", 3)], &read);
        assert_eq!(added, 3);
        assert_eq!(
            texts[Path::new("c.py")],
            "a = 1  # noqa: PG101, PG203\nb = 2  # noqa: F821, PG101\r\nc = 3  # noqa\n"
        );
    }
}
