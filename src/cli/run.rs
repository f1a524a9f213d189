//! Running the commands: configs are generated in parallel, results are
//! printed in discovery order, failures never stop the others.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::output::{json_str, Style};
use super::{Command, Format, Settings};
use crate::check::{check_generated, FileCheck, FileStatus};
use crate::normalize::RuffError;
use crate::pipeline::cached::{Compare, Expected, Note, Produced};
use crate::pipeline::{Context, Failure, Generated};
use crate::project::{ConfigFile, Project};

/// Stack for evaluation threads: the parser and evaluator recurse on
/// nested input, and depth limits turn runaway input into errors well
/// before this is used up.
const STACK_SIZE: usize = 256 << 20;

fn pool(jobs: Option<usize>) -> rayon::ThreadPool {
    let mut b = rayon::ThreadPoolBuilder::new().stack_size(STACK_SIZE);
    if let Some(j) = jobs.filter(|&j| j > 0) {
        b = b.num_threads(j);
    }
    b.build().expect("thread pool")
}

pub fn run(settings: &Settings) -> i32 {
    let style = Style::detect();
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("patchgen: error: cannot read the working directory: {e}");
            return 2;
        }
    };
    let project = match Project::find(&cwd) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("patchgen: {e}");
            return 2;
        }
    };
    for w in &project.warnings {
        eprintln!("{} {w}", style.warn("warning:"));
    }
    let ctx = Context::new(project, &cwd, settings.ruff.clone());
    if settings.command != Command::List {
        if let Err(code) = preflight_ruff(&ctx, settings) {
            return code;
        }
    }
    crate::timings::mark("project read");
    let cache = open_cache(&ctx, settings, &cwd, &style);
    let cache = cache.as_ref();
    crate::timings::mark("cache opened");
    let pool = pool(settings.jobs);
    let code = pool.install(|| match &settings.command {
        Command::List => list(&ctx, settings, &style),
        Command::One(module) => one(&ctx, settings, &style, module, cache),
        Command::All => all(&ctx, settings, &style, cache),
        Command::Check { modules, fix } => check(&ctx, settings, &style, modules, *fix, cache),
    });
    // The process exits next: freeing every syntax tree one by one would
    // only cost time (~5 % of a check's generation).
    std::mem::forget(ctx);
    code
}

/// The result cache, unless `--no-cache` (or it cannot be used: then the
/// run goes on without it, and `-v` says why).
fn open_cache(ctx: &Context, settings: &Settings, cwd: &Path, style: &Style) -> Option<crate::cache::Cache> {
    if settings.no_cache || settings.command == Command::List {
        return None;
    }
    match crate::cache::Cache::open(&ctx.project.cache_dir(cwd)) {
        Ok(c) => Some(c),
        Err(e) => {
            if settings.verbose {
                eprintln!("{} cache off: {e}", style.warn("note:"));
            }
            None
        }
    }
}

/// `patchgen clean`: remove the project's result cache.
pub fn clean(args: &[std::ffi::OsString]) -> i32 {
    if let Some(arg) = args.first() {
        let arg = arg.to_string_lossy();
        if arg == "-h" || arg == "--help" {
            println!("Remove the result cache (.patchgen_cache/, or PATCHGEN_CACHE_DIR / [tool.patchgen] cache-dir).\n\nUsage: patchgen clean");
            return 0;
        }
        eprintln!("patchgen: error: unexpected argument '{arg}' to clean\n\nUsage: patchgen clean");
        return 2;
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("patchgen: error: cannot read the working directory: {e}");
            return 2;
        }
    };
    let project = match Project::find(&cwd) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("patchgen: {e}");
            return 2;
        }
    };
    let dir = project.cache_dir(&cwd);
    match crate::cache::clean(&dir) {
        Ok(c) => {
            println!("Removed {} cache entr{} from {}", c.entries, if c.entries == 1 { "y" } else { "ies" }, c.dir.display());
            0
        }
        Err(e) => {
            eprintln!("patchgen: error: {e}");
            1
        }
    }
}

fn preflight_ruff(ctx: &Context, settings: &Settings) -> Result<(), i32> {
    let found = if settings.verbose {
        ctx.ruff.version().inspect(|v| eprintln!("using {v} ({})", ctx.ruff.program.display())).is_some()
    } else {
        ctx.ruff.is_available()
    };
    if found {
        Ok(())
    } else {
        eprintln!("patchgen: error: {}", RuffError::NotFound { program: ctx.ruff.program.clone() });
        Err(2)
    }
}

fn discover(ctx: &Context) -> Result<Vec<ConfigFile>, i32> {
    ctx.project.discover().map_err(|e| {
        eprintln!("patchgen: {e}");
        2
    })
}

/// A config's outcome in a multi-config run.
enum Outcome {
    Done(Box<Generated>),
    /// Answered by the cache: the files on disk are the expected ones.
    Cached(Box<Expected>),
    /// Evaluates fine but has no `config` PatchConfig: the reference skips it.
    NotAConfig,
    /// `optional=True` with its upstream module missing: skipped by `--check`.
    Skipped(String),
    Failed(Failure),
}

fn run_many(
    ctx: &Context,
    settings: &Settings,
    modules: &[String],
    cache: Option<&crate::cache::Cache>,
) -> Vec<(Outcome, f64, Note)> {
    // A drift check expects the checked-in `.py`: its `.diff` is taken while ruff runs.
    let checked_in = |job: &crate::pipeline::Job| match settings.command {
        Command::Check { .. } => crate::check::read_text(&job.py_path).ok().filter(|t| !t.is_empty()),
        _ => None,
    };
    // A hit needs the files on disk to be the expected ones: as the drift
    // gate compares them, or as generation would write them.
    let compare = match settings.command {
        Command::Check { .. } => Compare::AsCheck,
        _ if settings.dry_run => Compare::Written { diff: false },
        _ => Compare::Written { diff: settings.diff },
    };
    let cache = cache.map(|cache| crate::pipeline::cached::Use { cache, compare });
    let output_dir = match settings.command {
        Command::One(_) => settings.output_dir.as_deref(),
        _ => None,
    };
    ctx.generate_many_cached(cache, modules, &settings.config_name, output_dir, &checked_in)
        .into_iter()
        .map(|(result, secs, note)| {
            let outcome = match result {
                Ok(Produced::Fresh(g)) => Outcome::Done(g),
                Ok(Produced::Cached(e)) => Outcome::Cached(e),
                Err(Failure::NotAConfig { .. }) if modules.len() > 1 || settings.command == Command::All => {
                    Outcome::NotAConfig
                }
                Err(Failure::OptionalSkipped { source_module }) if matches!(settings.command, Command::Check { .. }) => {
                    Outcome::Skipped(source_module)
                }
                Err(f) => Outcome::Failed(f),
            };
            (outcome, secs, note)
        })
        .collect()
}

/// `-v`: what the cache did for a config.
fn print_note(style: &Style, settings: &Settings, note: &Note, pad: &str) {
    if settings.verbose && *note != Note::Off {
        eprintln!("{pad}{} {note}", style.dim("cache:"));
    }
}

fn print_warnings(style: &Style, warnings: &[String], injected: &[String]) {
    for w in warnings {
        eprintln!("{} {w}", style.warn("warning:"));
    }
    print_injected(style, injected, "");
}

/// One line naming the override targets that were injected, not overridden.
fn print_injected(style: &Style, injected: &[String], pad: &str) {
    if !injected.is_empty() {
        eprintln!(
            "{pad}{} {} method(s) not found upstream, injected: {}",
            style.dim("note:"),
            injected.len(),
            injected.join(", ")
        );
    }
}

fn list(ctx: &Context, settings: &Settings, style: &Style) -> i32 {
    let configs = match discover(ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let results: Vec<_> = configs
        .par_iter()
        .map(|c| ctx.evaluate(&c.module, &settings.config_name))
        .collect();
    let mut failed = 0;
    if settings.format == Format::Json {
        let mut rows = Vec::new();
        for (c, r) in configs.iter().zip(&results) {
            let row = match r {
                Ok((plan, _, _)) => format!(
                    "{{\"module\": {}, \"path\": {}, \"status\": \"ok\", \"source_module\": {}, \"target_file\": {}, \"patches\": {}}}",
                    json_str(&c.module),
                    json_str(&c.path.to_string_lossy()),
                    json_str(&plan.source_module),
                    json_str(&plan.target_file),
                    plan.patches.len()
                ),
                Err(Failure::NotAConfig { .. }) => format!(
                    "{{\"module\": {}, \"path\": {}, \"status\": \"not_a_config\"}}",
                    json_str(&c.module),
                    json_str(&c.path.to_string_lossy())
                ),
                Err(f) => {
                    failed += 1;
                    format!(
                        "{{\"module\": {}, \"path\": {}, \"status\": \"error\", \"error\": {}}}",
                        json_str(&c.module),
                        json_str(&c.path.to_string_lossy()),
                        json_str(&f.to_string())
                    )
                }
            };
            rows.push(format!("    {row}"));
        }
        println!("{{\"configs\": [\n{}\n]}}", rows.join(",\n"));
        return if failed > 0 { 1 } else { 0 };
    }
    println!("Available patch configurations:");
    let mut any = false;
    for (c, r) in configs.iter().zip(&results) {
        match r {
            Ok(_) => {
                any = true;
                println!("  • {}", c.module);
            }
            Err(Failure::NotAConfig { .. }) => {
                if settings.verbose {
                    eprintln!("  (skipped {}: no `{}` PatchConfig)", c.module, settings.config_name);
                }
            }
            Err(f) => {
                failed += 1;
                eprintln!("  {} {}\n{}", style.bad("FAIL"), c.module, indent(&f.to_string(), 4));
            }
        }
    }
    if !any {
        println!("  (none found)");
    }
    if failed > 0 { 1 } else { 0 }
}

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

/// Write (or, for a dry run, describe) one config's files. A cached
/// config's files are already on disk as generation would write them.
fn emit(g: &Outcome, settings: &Settings, style: &Style) -> Result<(), String> {
    let e = match g {
        Outcome::Done(g) => Expected::of(g),
        Outcome::Cached(e) => (**e).clone(),
        _ => unreachable!("only generated configs are emitted"),
    };
    if settings.verbose {
        println!("{}", e.summary);
        println!("  Upstream: {}", e.upstream_origin.display());
    }
    if settings.dry_run {
        println!("\n[DRY RUN] Would generate:");
        println!("  Output: {}", e.py_path.display());
        if settings.diff {
            println!("  Diff:   {}", e.diff_path.display());
        }
        println!("  Source lines: ~{}", e.upstream_lines);
        println!("  Patches to apply: {}", e.patches);
        return Ok(());
    }
    if let Outcome::Done(g) = g {
        if g.output_dir.is_file() {
            return Err(format!("{}: output directory is a file\n  help: point -o at a directory", g.output_dir.display()));
        }
        crate::atomic::write(&g.py_path, &g.py).map_err(|e| format!("{}: cannot write: {e}", g.py_path.display()))?;
    }
    println!("{} Generated: {}", style.ok("✓"), e.py_path.display());
    println!("  Lines: {}", e.py_lines);
    if settings.diff {
        if let Outcome::Done(g) = g {
            crate::atomic::write(&g.diff_path, &g.diff).map_err(|e| format!("{}: cannot write: {e}", g.diff_path.display()))?;
        }
        println!("{} Diff: {}", style.ok("✓"), e.diff_path.display());
        println!("  Lines: {}", e.diff_lines);
    }
    Ok(())
}

fn strict_failure(settings: &Settings, warnings: &[String]) -> Option<String> {
    if settings.strict && !warnings.is_empty() {
        Some(format!("{} warning(s) under --strict", warnings.len()))
    } else {
        None
    }
}

/// A generated or cached config's warnings and injected targets.
fn findings(outcome: &Outcome) -> (Vec<String>, Vec<String>) {
    match outcome {
        Outcome::Done(g) => (crate::pipeline::cached::warning_lines(&g.job), g.injected.clone()),
        Outcome::Cached(e) => (e.warnings.clone(), e.injected.clone()),
        _ => (Vec::new(), Vec::new()),
    }
}

fn one(ctx: &Context, settings: &Settings, style: &Style, module: &str, cache: Option<&crate::cache::Cache>) -> i32 {
    let module = ctx.project.normalize_module(module);
    if settings.verbose {
        println!("Loading patch module: {module}");
    }
    let output_dir = settings.output_dir.as_deref();
    if let Some(dir) = output_dir {
        if dir.is_file() {
            eprintln!("patchgen: error: -o {}: is a file, not a directory", dir.display());
            return 2;
        }
    }
    let (outcome, _, note) = run_many(ctx, settings, std::slice::from_ref(&module), cache).pop().expect("one config");
    print_note(style, settings, &note, "");
    match outcome {
        Outcome::Failed(f) => {
            eprintln!("{} {f}", style.bad("error:"));
            1
        }
        Outcome::NotAConfig | Outcome::Skipped(_) => unreachable!("a single config is never skipped"),
        outcome => {
            let (warnings, injected) = findings(&outcome);
            print_warnings(style, &warnings, &injected);
            if let Some(msg) = strict_failure(settings, &warnings) {
                eprintln!("{} {module}: {msg}", style.bad("error:"));
                return 1;
            }
            match emit(&outcome, settings, style) {
                Ok(()) => 0,
                Err(msg) => {
                    eprintln!("{} {msg}", style.bad("error:"));
                    1
                }
            }
        }
    }
}

fn all(ctx: &Context, settings: &Settings, style: &Style, cache: Option<&crate::cache::Cache>) -> i32 {
    let configs = match discover(ctx) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let modules: Vec<String> = configs.iter().map(|c| c.module.clone()).collect();
    let results = run_many(ctx, settings, &modules, cache);
    let mut failed: Vec<String> = Vec::new();
    let mut generated = 0;
    for (module, (outcome, secs, note)) in modules.iter().zip(results) {
        match outcome {
            Outcome::NotAConfig => continue,
            Outcome::Skipped(_) => unreachable!("only --check skips"),
            Outcome::Done(_) | Outcome::Cached(_) => {
                println!("\n{}\nGenerating: {module} {}\n{}", "=".repeat(70), style.dim(&format!("({:.0} ms)", secs * 1000.0)), "=".repeat(70));
                print_note(style, settings, &note, "");
                let (warnings, injected) = findings(&outcome);
                print_warnings(style, &warnings, &injected);
                if let Some(msg) = strict_failure(settings, &warnings) {
                    eprintln!("{} {module}: {msg}", style.bad("FAIL"));
                    failed.push(module.clone());
                    continue;
                }
                match emit(&outcome, settings, style) {
                    Ok(()) => generated += 1,
                    Err(msg) => {
                        eprintln!("{} {msg}", style.bad("FAIL"));
                        failed.push(module.clone());
                    }
                }
            }
            Outcome::Failed(f) => {
                println!("\n{}\nGenerating: {module}\n{}", "=".repeat(70), "=".repeat(70));
                print_note(style, settings, &note, "");
                eprintln!("{} {f}", style.bad("FAIL"));
                failed.push(module.clone());
            }
        }
    }
    if generated == 0 && failed.is_empty() {
        eprintln!("No patch configs found.");
        return 1;
    }
    if !failed.is_empty() {
        eprintln!("\nFailed configs ({}):", failed.len());
        for f in &failed {
            eprintln!("  {f}");
        }
        return 1;
    }
    println!("\nAll {generated} configs generated successfully.");
    0
}

struct CheckRow {
    module: String,
    secs: f64,
    result: Result<Vec<crate::check::FileCheck>, String>,
    py_path: Option<PathBuf>,
    warnings: Vec<String>,
    /// `optional=True` config whose upstream module is missing.
    skipped: Option<String>,
    note: Note,
}

fn check(
    ctx: &Context,
    settings: &Settings,
    style: &Style,
    only: &[String],
    fix: bool,
    cache: Option<&crate::cache::Cache>,
) -> i32 {
    let modules: Vec<String> = if only.is_empty() {
        match discover(ctx) {
            Ok(c) => c.into_iter().map(|c| c.module).collect(),
            Err(code) => return code,
        }
    } else {
        only.iter().map(|m| ctx.project.normalize_module(m)).collect()
    };
    crate::timings::mark("discovered");
    let results = run_many(ctx, settings, &modules, cache);
    if settings.verbose && settings.format == Format::Text {
        for (outcome, _, _) in &results {
            print_injected(style, &findings(outcome).1, "  ");
        }
    }
    // Reading and comparing the checked-in files, config by config in parallel.
    let rows: Vec<CheckRow> = modules
        .par_iter()
        .zip(results)
        .filter_map(|(module, (outcome, secs, note))| {
            let (warnings, _) = findings(&outcome);
            let row = match outcome {
                Outcome::NotAConfig => return None,
                Outcome::Skipped(source_module) => CheckRow {
                    module: module.clone(),
                    secs,
                    result: Ok(Vec::new()),
                    py_path: None,
                    warnings: vec![],
                    skipped: Some(source_module),
                    note,
                },
                Outcome::Done(g) => {
                    let result = match strict_failure(settings, &warnings) {
                        Some(msg) => Err(format!("{msg}:\n{}", warnings.join("\n"))),
                        None => check_generated(&g, fix).map_err(|e| format!("cannot compare or write: {e}")),
                    };
                    CheckRow { module: module.clone(), secs, result, py_path: Some(g.py_path.clone()), warnings, skipped: None, note }
                }
                // The files on disk are the expected ones: nothing drifted, nothing to fix.
                Outcome::Cached(e) => {
                    let result = match strict_failure(settings, &warnings) {
                        Some(msg) => Err(format!("{msg}:\n{}", warnings.join("\n"))),
                        None => Ok(vec![
                            FileCheck { path: e.py_path.clone(), status: FileStatus::UpToDate },
                            FileCheck { path: e.diff_path.clone(), status: FileStatus::UpToDate },
                        ]),
                    };
                    CheckRow { module: module.clone(), secs, result, py_path: Some(e.py_path.clone()), warnings, skipped: None, note }
                }
                Outcome::Failed(f) => CheckRow {
                    module: module.clone(),
                    secs,
                    result: Err(f.to_string()),
                    py_path: None,
                    warnings: vec![],
                    skipped: None,
                    note,
                },
            };
            Some(row)
        })
        .collect();
    crate::timings::mark("compared");
    let failed = rows.iter().filter(|r| r.result.is_err()).count();
    let drifted = rows
        .iter()
        .filter(|r| matches!(&r.result, Ok(files) if files.iter().any(|f| matches!(f.status, FileStatus::Drift(_)))))
        .count();
    let code = if failed > 0 || drifted > 0 { 1 } else { 0 };
    if settings.format == Format::Json {
        print_check_json(&rows);
        return code;
    }
    if rows.is_empty() {
        println!("No patch configs found.");
        return 0;
    }
    println!("Found {} patch config(s):\n", rows.len());
    for row in &rows {
        println!("[{}]", row.module);
        print_note(style, settings, &row.note, "  ");
        for w in &row.warnings {
            eprintln!("  {} {w}", style.warn("warning:"));
        }
        if let Some(source_module) = &row.skipped {
            println!("  {}  {source_module} (optional source not importable)", style.warn("SKIP"));
            continue;
        }
        match &row.result {
            Err(msg) => println!("  {}  {}", style.bad("FAIL"), indent(msg, 8).trim_start()),
            Ok(files) => {
                let mut ok = true;
                for f in files {
                    match &f.status {
                        FileStatus::UpToDate => {}
                        FileStatus::Fixed => println!("  {} {}", style.ok("FIXED"), f.path.display()),
                        FileStatus::Drift(d) => {
                            ok = false;
                            println!("  {} {}", style.bad("DRIFT"), f.path.display());
                            print!("{}", style.diff(d));
                        }
                    }
                }
                if ok && !fix {
                    let path = row.py_path.as_deref().unwrap_or(Path::new(""));
                    println!("  {}    {} {}", style.ok("OK"), path.display(), style.dim(&format!("({:.0} ms)", row.secs * 1000.0)));
                }
            }
        }
    }
    println!();
    if failed > 0 {
        println!("{} config(s) failed:", failed);
        for r in rows.iter().filter(|r| r.result.is_err()) {
            println!("  {}", r.module);
        }
    }
    if code == 0 {
        println!("All generated files are up to date.");
    } else if drifted > 0 {
        println!("Generated files are out of date. Re-run with --fix.");
    }
    code
}

fn print_check_json(rows: &[CheckRow]) {
    let mut out = Vec::new();
    for r in rows {
        let (status, detail) = match &r.result {
            _ if r.skipped.is_some() => ("skipped", String::new()),
            Err(msg) => ("error", format!(", \"error\": {}", json_str(msg))),
            Ok(files) => {
                let items: Vec<String> = files
                    .iter()
                    .map(|f| {
                        let (s, diff) = match &f.status {
                            FileStatus::UpToDate => ("ok", String::new()),
                            FileStatus::Fixed => ("fixed", String::new()),
                            FileStatus::Drift(d) => ("drift", format!(", \"diff\": {}", json_str(d))),
                        };
                        format!("{{\"path\": {}, \"status\": \"{s}\"{diff}}}", json_str(&f.path.to_string_lossy()))
                    })
                    .collect();
                let any_drift = files.iter().any(|f| matches!(f.status, FileStatus::Drift(_)));
                (if any_drift { "drift" } else { "ok" }, format!(", \"files\": [{}]", items.join(", ")))
            }
        };
        let warnings: Vec<String> = r.warnings.iter().map(|w| json_str(w)).collect();
        out.push(format!(
            "    {{\"module\": {}, \"status\": \"{status}\", \"seconds\": {:.4}, \"warnings\": [{}]{detail}}}",
            json_str(&r.module),
            r.secs,
            warnings.join(", ")
        ));
    }
    println!("{{\"configs\": [\n{}\n]}}", out.join(",\n"));
}
