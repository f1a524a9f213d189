//! `patchgen lint [MODULE...]` and `patchgen rule CODE|--all`: arguments,
//! the run (configs in parallel, then cross-config rules, then
//! suppressions) and the report. Exit codes: 0 clean, 1 findings, 2 usage
//! or project errors (including a config that cannot be evaluated or
//! generated: lint cannot see it).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::context::{LintContext, ProjectContext, Shared};
use super::settings::{LintSettings, selects};
use super::{Rule, noqa, rules};
use crate::diagnostics::{Diagnostic, Severity};
use crate::pipeline::{Context, Failure};
use crate::project::Project;
use crate::settings::{LintFlags, Overrides, Resolved, process_env};
use crate::survey::modules::Version;
use crate::survey::source::{self, Upstream, WheelCache};
use crate::upstream::SearchPath;

pub use crate::cli::Format;
use crate::cli::printer::print_outcome;
use crate::cli::{ExitStatus, Printer, Report};

const EXAMPLES: &str = "\
Examples:
  patchgen lint                                 every config, default rules
  patchgen lint pkg.models.qwen3.qwen3_gpu_patch_gen_config
  patchgen lint --select PG1,PG2 --ignore PG203
  patchgen lint --upstream 5.16.1               preview a pin bump (wheel cached as `survey` caches it)
  patchgen lint --format github                 annotations in GitHub Actions
  patchgen rule PG101                           what a rule checks and why

Suppress a finding with `# noqa: PG101` on the config line it points at, or with
per-file-ignores in [tool.patchgen.lint].
Exit status: 0 clean, 1 findings, 2 usage or project error.";

/// Check patch configs for the protocol's silent pitfalls (statically; no ruff, no torch).
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = EXAMPLES)]
pub struct LintArgs {
    /// Config modules to lint (default: every discovered config).
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    /// Rules to run instead of the defaults: codes, prefixes (PG1) or ALL; comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub select: Option<Vec<String>>,
    /// Rules to add to the selection.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub extend_select: Vec<String>,
    /// Rules to leave out.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    pub ignore: Vec<String>,
    /// Lint against another upstream: a directory, a .whl file or a version number.
    #[arg(long, value_name = "DIR|WHEEL|VERSION")]
    pub upstream: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Print how often each rule fired instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// The PatchConfig variable in each config module.
    #[arg(short = 'c', long, value_name = "NAME", default_value = "config")]
    pub config_name: String,
    /// Find the project from this directory instead of the working directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Never run pip for --upstream VERSION (the wheel must be cached).
    #[arg(long)]
    pub no_download: bool,
    /// Parallel jobs (default: one per CPU).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Neither read nor write the result cache (also PATCHGEN_NO_CACHE=1).
    #[arg(long)]
    pub no_cache: bool,
    /// Say whether the result came from the cache (and, if not, why).
    #[arg(short, long)]
    pub verbose: bool,
}

const RULE_EXAMPLES: &str = "\
Examples:
  patchgen rule PG101                  one rule's documentation (what, why, example, fix)
  patchgen rule dead-patch-target      the same, by name
  patchgen rule --all                  every rule, in code order";

/// Print a lint rule's documentation.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = RULE_EXAMPLES)]
pub struct RuleArgs {
    /// The rule's code (PG101) or name (dead-patch-target).
    #[arg(value_name = "CODE", required_unless_present = "all")]
    pub code: Option<String>,
    /// Every rule, in code order.
    #[arg(long)]
    pub all: bool,
}

/// A usage or project problem (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The outcome of a lint run.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct LintReport {
    /// The upstream version linted against.
    pub upstream: String,
    /// Configs linted.
    pub configs: usize,
    /// Codes of the rules that ran.
    pub rules: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// Configs lint could not read (evaluation or generation failed).
    pub errors: Vec<Diagnostic>,
    /// Findings silenced by `noqa` or per-file-ignores.
    pub suppressed: usize,
    /// What the result cache did (`-v`; not part of the report).
    #[serde(skip)]
    pub cache_note: Option<String>,
}

impl LintReport {
    pub fn exit_code(&self) -> i32 {
        if !self.errors.is_empty() {
            2
        } else if self.diagnostics.is_empty() {
            0
        } else {
            1
        }
    }

    /// `(code, name, count)` per rule that fired, most frequent first.
    pub fn statistics(&self) -> Vec<(String, String, usize)> {
        let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for d in &self.diagnostics {
            *counts.entry((&d.code, &d.name)).or_default() += 1;
        }
        let mut out: Vec<_> = counts.into_iter().map(|((c, n), k)| (c.to_string(), n.to_string(), k)).collect();
        out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        out
    }
}

impl Report for LintReport {
    fn command(&self) -> &'static str {
        "lint"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.errors.iter().chain(&self.diagnostics).collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = crate::cli::printer::fields(self);
        m.remove("diagnostics");
        m.remove("errors");
        m
    }

    /// Each finding with its source excerpt (the shared renderer, on
    /// stderr), then the summary line on stdout.
    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        if let Some(note) = &self.cache_note {
            let label = p.style.dim("cache:");
            p.err(&format!("{label} {note}\n"))?;
        }
        for d in self.errors.iter().chain(&self.diagnostics) {
            p.diagnostic(d)?;
        }
        p.out(summary(self).as_str())
    }

    fn exit_status(&self) -> ExitStatus {
        match self.exit_code() {
            0 => ExitStatus::Success,
            1 => ExitStatus::Failure,
            _ => ExitStatus::Error,
        }
    }
}

/// Stack for evaluation threads (as `patchgen --check` uses).
const STACK_SIZE: usize = 256 << 20;

/// The rules `settings` (flags, environment and pyproject resolved) select.
pub fn selected_rules(settings: &LintSettings) -> Result<Vec<&'static Rule>, UsageError> {
    let select: Option<&Vec<String>> = settings.select.as_ref();
    let extend: Vec<&String> = settings.extend_select.iter().collect();
    let ignore: Vec<&String> = settings.ignore.iter().collect();
    let all = select.into_iter().flatten().chain(extend.iter().copied()).chain(ignore.iter().copied());
    for s in all {
        if !rules::RULES.iter().any(|r| selects(s, r.code, r.name)) {
            return Err(UsageError(format!(
                "unknown rule selector `{s}`\n  help: `patchgen rule --all` lists the rules"
            )));
        }
    }
    Ok(rules::RULES
        .iter()
        .filter(|r| {
            let on = match select {
                Some(sel) => sel.iter().any(|s| selects(s, r.code, r.name)),
                None => r.default_on,
            } || extend.iter().any(|s| selects(s, r.code, r.name));
            on && !ignore.iter().any(|s| selects(s, r.code, r.name))
        })
        .collect())
}

/// A config lint cannot see, as `PG000`: the failure's own diagnostic
/// (message, help, and the place with its column and range where known)
/// under lint's code.
fn failure_diagnostic(module: &str, failure: &Failure) -> Diagnostic {
    Diagnostic {
        code: "PG000".to_string(),
        name: "config-error".to_string(),
        severity: Severity::Error,
        ..failure.diagnostic(module)
    }
}

/// The upstream lint reads: `--upstream` resolved as `survey` resolves
/// `--to`, else the search path `check` uses.
fn upstream_for(
    arg: Option<&str>,
    project: &Project,
    cwd: &Path,
    download: bool,
) -> Result<(Upstream, Option<PathBuf>), UsageError> {
    let package_root = project.package_root();
    match arg {
        Some(arg) => {
            let cache =
                WheelCache { dir: WheelCache::default_dir(&project.root), package: "transformers".into(), download };
            let up = source::resolve(arg, cwd, &cache).map_err(|e| UsageError(format!("--upstream {e}")))?;
            let location = up.location.clone();
            let search = SearchPath::new(vec![location.clone(), package_root]);
            Ok((Upstream { search, ..up }, Some(location)))
        }
        None => {
            let search = SearchPath::from_env(&project.root, cwd, &package_root);
            let version = search.transformers_version();
            Ok((Upstream { arg: String::new(), version, location: PathBuf::new(), search }, None))
        }
    }
}

/// Run lint. `cwd` resolves relative paths; the project is found from
/// `args.project` (else `cwd`).
pub fn lint(args: &LintArgs, cwd: &Path) -> Result<LintReport, UsageError> {
    let project_dir = match &args.project {
        Some(p) if p.is_relative() => cwd.join(p),
        Some(p) => p.clone(),
        None => cwd.to_path_buf(),
    };
    let project = Project::find(&project_dir).map_err(|e| UsageError(e.to_string()))?;
    let flags = LintFlags {
        select: args.select.clone(),
        extend_select: args.extend_select.clone(),
        ignore: args.ignore.clone(),
    };
    let overrides =
        Overrides { jobs: args.jobs, format: Some(args.format), no_cache: args.no_cache, ..Overrides::default() };
    let resolved = Resolved::resolve(&overrides, &process_env, &project)
        .map_err(|e| UsageError(e.to_string()))?
        .with_lint_flags(&flags);
    let settings = LintSettings::from_options(&resolved.lint, &project.settings.package_prefix);
    let rules = selected_rules(&settings)?;
    let (upstream, location) = upstream_for(args.upstream.as_deref(), &project, cwd, !args.no_download)?;
    let version_label = upstream.version.clone();
    let mut pipeline = Context::new(project, &project_dir, None);
    if let Some(location) = location {
        pipeline.search = SearchPath::new(vec![location, pipeline.project.package_root()]);
    }
    let modules: Vec<String> = if args.modules.is_empty() {
        pipeline.project.discover().map_err(|e| UsageError(e.to_string()))?.into_iter().map(|c| c.module).collect()
    } else {
        let modules: Vec<String> = args.modules.iter().map(|m| pipeline.project.normalize_module(m)).collect();
        if let Some(m) = modules.iter().find(|m| pipeline.loader.find(m).is_none()) {
            return Err(UsageError(format!(
                "{m}: no such module under {}\n  help: `patchgen --list` shows the config modules",
                pipeline.project.package_root().display()
            )));
        }
        modules
    };
    let explicit = !args.modules.is_empty();
    // The result cache: a hit answers the whole run (see `cached`).
    let cache = super::cached::open(&resolved, &pipeline.project, cwd);
    let key = super::cached::key(args, &resolved.lint, &modules, &project_dir);
    let mut note = match &cache {
        Ok(None) => None,
        Err(why) => Some(format!("off: {why}")),
        Ok(Some(c)) => match c.lookup::<LintReport>(&key, &pipeline.fresh_prober(c)) {
            crate::cache::Lookup::Hit(mut report) => {
                c.save_files();
                report.cache_note = args.verbose.then(|| "hit".to_string());
                return Ok(report);
            }
            crate::cache::Lookup::Miss(m) => Some(format!("miss: {m}")),
        },
    };
    let before = match &cache {
        Ok(Some(c)) => super::cached::before(&pipeline, &upstream.search, &pipeline.fresh_prober(c)),
        _ => Vec::new(),
    };
    let shared = Shared::new(pipeline, Version::new(upstream), settings);
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(STACK_SIZE);
    if let Some(j) = resolved.jobs.filter(|&j| j > 0) {
        pool = pool.num_threads(j);
    }
    let pool = pool.build().map_err(|e| UsageError(format!("cannot start worker threads: {e}")))?;
    let mut report = pool.install(|| run(&shared, &modules, &args.config_name, explicit, &rules, version_label));
    if let Ok(Some(c)) = &cache {
        let inputs = super::cached::inputs(before, &shared);
        if let Err(why) = super::cached::store(c, &key, &inputs, &report, &shared.pipeline) {
            note = note.map(|n| format!("{n}; {why}"));
        }
    }
    report.cache_note = note.filter(|_| args.verbose);
    // The process exits next: freeing every syntax tree costs only time.
    std::mem::forget(shared);
    Ok(report)
}

fn run(
    shared: &Shared,
    modules: &[String],
    config_name: &str,
    explicit: bool,
    rules: &[&'static Rule],
    upstream: String,
) -> LintReport {
    // Boxed: a failure is large and rare.
    let built: Vec<Result<LintContext, Box<(String, Failure)>>> = modules
        .par_iter()
        .map(|m| LintContext::build(shared, m, config_name).map_err(|f| Box::new((m.clone(), f))))
        .collect();
    crate::timings::mark("lint: configs generated and parsed");
    let mut errors = Vec::new();
    let mut contexts = Vec::new();
    for b in built {
        match b.map_err(|e| *e) {
            Ok(c) => contexts.push(c),
            Err((_, Failure::NotAConfig { .. })) if !explicit => {}
            Err((_, Failure::OptionalSkipped { .. })) => {}
            Err((m, f)) => errors.push(failure_diagnostic(&m, &f)),
        }
    }
    let mut found: Vec<Diagnostic> = contexts
        .par_iter()
        .flat_map_iter(|ctx| {
            rules.iter().flat_map(move |r| (r.check)(ctx).into_iter().map(move |d| ctx.own(d))).collect::<Vec<_>>()
        })
        .collect();
    crate::timings::mark("lint: per-config rules");
    let project = ProjectContext { shared, configs: &contexts };
    for r in rules {
        if let Some(check) = r.check_project {
            found.extend(check(&project));
        }
    }
    crate::timings::mark("lint: project rules");
    let before = found.len();
    let root = shared.project_root().to_path_buf();
    found.retain(|d| !suppressed(shared, &root, d));
    let suppressed = before - found.len();
    sort(&mut found);
    let found = merge_same_line(found);
    let report = LintReport {
        upstream,
        configs: contexts.len(),
        rules: rules.iter().map(|r| r.code.to_string()).collect(),
        diagnostics: found,
        errors,
        suppressed,
        cache_note: None,
    };
    std::mem::forget(contexts);
    report
}

/// One finding per (code, config line, message): a replacement shared by
/// several configs (an NPU config reusing the GPU one's function) is one
/// edit; the other configs' generated files are kept as related locations.
fn merge_same_line(found: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(found.len());
    for d in found {
        match out
            .iter_mut()
            .rev()
            .take_while(|o| o.location == d.location)
            .find(|o| o.code == d.code && o.message == d.message)
        {
            Some(kept) => {
                for r in d.related {
                    if !kept.related.contains(&r) {
                        kept.related.push(r);
                    }
                }
            }
            None => out.push(d),
        }
    }
    out
}

fn sort(ds: &mut [Diagnostic]) {
    ds.sort_by(|a, b| {
        let key = |d: &Diagnostic| d.location.as_ref().map(|l| (l.path.clone(), l.line, l.column));
        key(a).cmp(&key(b)).then_with(|| a.code.cmp(&b.code)).then_with(|| a.message.cmp(&b.message))
    });
}

/// `# noqa` on the primary line, or a per-file ignore of its file.
fn suppressed(shared: &Shared, root: &Path, d: &Diagnostic) -> bool {
    let Some(loc) = &d.location else { return false };
    let rel = loc.path.strip_prefix(root).unwrap_or(&loc.path).to_string_lossy().replace('\\', "/");
    if shared.settings.ignored_for(&rel).iter().any(|c| selects(c, &d.code, &d.name)) {
        return true;
    }
    if loc.line == 0 {
        return false;
    }
    let Ok(file) = shared.pipeline.loader.parse_file(&loc.path) else {
        return false;
    };
    let line = file.text.lines().nth(loc.line - 1).unwrap_or_default();
    noqa::parse(line).is_some_and(|n| n.suppresses(&d.code))
}

/// Text: `path:line[:col]: CODE [name] message`, then help and related lines.
pub fn render_text(report: &LintReport, cwd: &Path) -> String {
    let mut out = String::new();
    let rel = |p: &Path| p.strip_prefix(cwd).unwrap_or(p).display().to_string();
    for d in report.errors.iter().chain(&report.diagnostics) {
        let place = match &d.location {
            Some(l) => {
                let mut l = l.clone();
                l.path = PathBuf::from(rel(&l.path));
                format!("{l}: ")
            }
            None => d.config.as_ref().map(|c| format!("{c}: ")).unwrap_or_default(),
        };
        out.push_str(&format!("{place}{} [{}] {}\n", d.code, d.name, d.message));
        for r in &d.related {
            let mut l = r.location.clone();
            l.path = PathBuf::from(rel(&l.path));
            out.push_str(&format!("  = {}: {l}\n", r.message));
        }
        if let Some(h) = &d.help {
            out.push_str(&format!("  help: {h}\n"));
        }
    }
    out.push_str(&summary(report));
    out
}

/// The last line: how many findings, in how many configs, against which upstream.
fn summary(report: &LintReport) -> String {
    let mut out = String::new();
    let n = report.diagnostics.len();
    if n == 0 && report.errors.is_empty() {
        out.push_str(&format!("All checks passed ({} configs, upstream {}).\n", report.configs, report.upstream));
    } else {
        out.push_str(&format!(
            "Found {n} finding{} in {} configs (upstream {}){}.\n",
            if n == 1 { "" } else { "s" },
            report.configs,
            report.upstream,
            if report.suppressed > 0 { format!("; {} suppressed", report.suppressed) } else { String::new() }
        ));
    }
    out
}

/// `--statistics`: one line per rule.
pub fn render_statistics(report: &LintReport) -> String {
    report.statistics().iter().map(|(c, n, k)| format!("{k:>5}\t{c}\t{n}\n")).collect()
}

/// GitHub workflow commands (`::error file=…,line=…,title=…::message`), as every command writes them.
pub fn render_github(report: &LintReport, cwd: &Path) -> String {
    report.errors.iter().chain(&report.diagnostics).map(|d| crate::diagnostics::render::github(d, cwd)).collect()
}

pub fn render_json(report: &LintReport) -> String {
    serde_json::to_string_pretty(report).expect("report serialises") + "\n"
}

/// `patchgen lint` from the command tree: lint from the working directory.
pub fn run_command(args: &LintArgs) -> ExitStatus {
    match std::env::current_dir() {
        Ok(cwd) => execute(args, &cwd),
        Err(e) => print_outcome::<LintReport>(
            args.format,
            "lint",
            Err((format!("cannot read the working directory: {e}"), ExitStatus::Error)),
        ),
    }
}

/// `patchgen rule` from the command tree: the rule's documentation, printed as a report.
pub fn run_rule(args: &RuleArgs) -> ExitStatus {
    let docs = rule_text(args).map(|text| RuleDocs { text }).map_err(|e| (e.to_string(), ExitStatus::Error));
    print_outcome(Format::Text, "rule", docs)
}

/// `patchgen lint ARGS…` (the arguments after `lint`): prints the report,
/// returns the exit code.
pub fn run_lint_cli(args: &[OsString]) -> i32 {
    run_cli("lint", args)
}

/// `patchgen rule CODE` / `--all`: the rule's documentation.
pub fn run_rule_cli(args: &[OsString]) -> i32 {
    run_cli("rule", args)
}

fn run_cli(command: &str, args: &[OsString]) -> i32 {
    let argv = ["patchgen", command].into_iter().map(OsString::from).chain(args.iter().cloned());
    match crate::cli::parse(argv) {
        Ok(c) => crate::cli::run(c).code(),
        Err(e) => crate::cli::print_clap_error(&e).code(),
    }
}

/// Lint with parsed arguments, print through the shared printer (text:
/// each finding with its source excerpt on stderr and a summary on stdout;
/// `json`; `github`; `--statistics`), return how the process ends.
pub fn execute(args: &LintArgs, cwd: &Path) -> ExitStatus {
    let outcome = lint(args, cwd).map_err(|e| (e.to_string(), ExitStatus::Error));
    match outcome {
        Ok(report) if args.statistics => print_outcome(args.format, "lint", Ok(Statistics(report))),
        outcome => print_outcome(args.format, "lint", outcome),
    }
}

/// `patchgen rule`'s output: a rule's documentation (markdown).
#[derive(Serialize)]
pub struct RuleDocs {
    pub text: String,
}

impl crate::cli::printer::PlainReport for RuleDocs {
    const COMMAND: &'static str = "rule";
    fn render(&self) -> String {
        self.text.clone()
    }
}

/// `lint --statistics`: how often each rule fired, instead of the findings.
struct Statistics(LintReport);

impl Report for Statistics {
    fn command(&self) -> &'static str {
        "lint"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.0.diagnostics()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0.json_fields()
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&render_statistics(&self.0))
    }

    fn exit_status(&self) -> ExitStatus {
        self.0.exit_status()
    }
}

/// What `patchgen rule` prints.
pub fn rule_text(args: &RuleArgs) -> Result<String, UsageError> {
    if args.all {
        return Ok(rules::RULES.iter().map(super::docs::rule_markdown).collect::<Vec<_>>().join("\n"));
    }
    let code = args.code.as_deref().unwrap_or_default();
    match super::rule(code) {
        Some(r) => Ok(super::docs::rule_markdown(r)),
        None => Err(UsageError(format!("unknown rule `{code}`\n  help: `patchgen rule --all` lists the rules"))),
    }
}
