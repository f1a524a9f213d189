//! The phase-6/7 part of `new`'s text report: per table file the rows
//! added (their text on `--dry-run`), what was reset and what to confirm,
//! the files left alone and why; and the phase-7 commands, which end the
//! report.

use std::fmt::Write;

use super::TestRows;

/// The report section.
pub fn text(rows: &TestRows, dry_run: bool) -> String {
    let mut out = String::new();
    let verb = if dry_run { "would add" } else { "added" };
    let _ = writeln!(out, "\nTest tables (phase 6):");
    for f in &rows.files {
        if let Some(why) = &f.fallback {
            let _ = writeln!(out, "  {}: {why}", f.file);
        }
        for t in &f.tables {
            let ids: Vec<&str> = t.rows.iter().filter_map(|r| r.id.as_deref()).collect();
            let _ = writeln!(
                out,
                "  {}:{} — {verb} {} row(s) to {} from {} ({})",
                f.file,
                t.after_line,
                t.rows.len(),
                t.table,
                t.donor,
                ids.join(", ")
            );
            for r in &t.rows {
                for x in &r.resets {
                    let _ = writeln!(out, "      reset {x}");
                }
                for x in &r.todos {
                    let _ = writeln!(out, "      TODO {x}");
                }
                if dry_run {
                    for l in r.text.lines() {
                        let _ = writeln!(out, "    + {l}");
                    }
                }
            }
        }
    }
    for s in &rows.skipped {
        let _ = writeln!(out, "  {}: no row — {}", s.file, s.message);
    }
    for n in &rows.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    for w in &rows.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}

/// The phase-7 commands (the report ends with them).
pub fn commands(rows: &TestRows) -> String {
    let mut out = String::new();
    if !rows.commands.is_empty() {
        let _ = writeln!(out, "\nRun (phase 7):");
        for c in &rows.commands {
            let _ = writeln!(out, "  {c}");
        }
    }
    out
}
