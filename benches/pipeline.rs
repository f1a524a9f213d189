//! `T_gen`: evaluation + generation of every config of a project, without
//! ruff, through the library exactly as `patchgen --check` drives it (same
//! discovery, same rayon pool, same `Context::generate_raw`).
//!
//! ```text
//! cargo bench --bench pipeline -- TREE [--runs N] [--jobs N] [--dump DIR] [--once]
//! ```
//!
//! Run from anywhere; the working directory is set to `TREE`, and the
//! upstream search path comes from `PYTHONPATH` as for the CLI. Each run
//! builds a fresh `Context` (nothing is cached between runs) and times
//! `Project::find` → discovery → every config's `generate_raw`. Prints one
//! line per run and the median, in milliseconds. `--once` prints only the
//! run's milliseconds (for `scripts/bench.sh`, which times cold processes).
//! `--dump DIR` writes each config's un-normalised text to
//! `DIR/<path relative to TREE>` (for measuring ruff alone on the same input).
//! With `--with-ruff`, also normalises (as `--check` does) and builds the
//! `.diff`s, and reports those times separately.
#![allow(clippy::print_stdout)] // a measurement tool: its figures are its output

// The same allocator as the `patchgen` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::time::Instant;

use patchgen_core::pipeline::Context;
use patchgen_core::project::Project;
use rayon::prelude::*;

struct Args {
    tree: PathBuf,
    runs: usize,
    jobs: Option<usize>,
    dump: Option<PathBuf>,
    once: bool,
    with_ruff: bool,
}

fn usage() -> ! {
    eprintln!("usage: pipeline TREE [--runs N] [--jobs N] [--dump DIR] [--once] [--with-ruff]");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut it = std::env::args().skip(1);
    let mut args = Args { tree: PathBuf::new(), runs: 5, jobs: None, dump: None, once: false, with_ruff: false };
    let mut tree = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => args.runs = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--jobs" => args.jobs = Some(it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage())),
            "--dump" => args.dump = Some(PathBuf::from(it.next().unwrap_or_else(|| usage()))),
            "--once" => args.once = true,
            "--with-ruff" => args.with_ruff = true,
            // `cargo bench` passes `--bench`; libtest-style filters are ignored.
            "--bench" => {}
            s if s.starts_with('-') => usage(),
            s => tree = Some(PathBuf::from(s)),
        }
    }
    args.tree = tree.or_else(|| std::env::var_os("VEOMNI_TREE").map(PathBuf::from)).unwrap_or_else(|| usage());
    if args.once {
        args.runs = 1;
    }
    args
}

struct Timing {
    gen_ms: f64,
    ruff_ms: f64,
    diff_ms: f64,
    configs: usize,
    lines: usize,
}

fn run_once(args: &Args, cwd: &Path) -> Timing {
    let start = Instant::now();
    let project = Project::find(cwd).unwrap_or_else(|e| {
        eprintln!("pipeline: {e}");
        std::process::exit(2)
    });
    let ctx = Context::new(project, cwd, None, &patchgen_core::settings::Env::capture());
    let configs = ctx.project.discover().unwrap_or_else(|e| {
        eprintln!("pipeline: {e}");
        std::process::exit(2)
    });
    let raws: Vec<_> = configs.par_iter().map(|c| ctx.generate_raw(&c.module, "config", None)).collect();
    let gen_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut ok = Vec::new();
    for (c, r) in configs.iter().zip(raws) {
        match r {
            Ok(raw) => ok.push(raw),
            Err(patchgen_core::pipeline::Failure::NotAConfig { .. }) => {}
            Err(f) => eprintln!("pipeline: {}: {f}", c.module),
        }
    }
    // (Counting lines costs a few ms: not in `--once` mode, which is timed from outside.)
    let lines = if args.once { 0 } else { ok.iter().map(|r| r.text.lines().count()).sum() };
    if let Some(dir) = &args.dump {
        for r in &ok {
            let rel = r.abs_target.strip_prefix(cwd).unwrap_or(&r.abs_target);
            let out = dir.join(rel);
            std::fs::create_dir_all(out.parent().unwrap()).expect("create dump dir");
            std::fs::write(&out, &r.text).expect("write dump");
        }
    }
    let configs = ok.len();
    let (mut ruff_ms, mut diff_ms) = (0.0, 0.0);
    if args.with_ruff {
        let t = Instant::now();
        let items: Vec<_> = ok.iter().map(|r| (r.text.as_str(), r.abs_target.as_path())).collect();
        let results = ctx.ruff.normalize_many(&items, rayon::current_num_threads());
        ruff_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let finished: Vec<_> = ok
            .into_par_iter()
            .zip(results)
            .filter_map(|(r, res)| match res {
                Ok(py) => Some(r.finish(py)),
                Err(e) => {
                    eprintln!("pipeline: {}: {e}", r.module);
                    None
                }
            })
            .collect();
        diff_ms = t.elapsed().as_secs_f64() * 1e3;
        drop(finished);
    } else if args.once {
        std::mem::forget(ok);
    }
    if args.once {
        // As the CLI does: the process is about to exit.
        std::mem::forget(ctx);
    }
    Timing { gen_ms, ruff_ms, diff_ms, configs, lines }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() {
    let args = parse_args();
    let tree = std::fs::canonicalize(&args.tree).unwrap_or_else(|e| {
        eprintln!("pipeline: {}: {e}", args.tree.display());
        std::process::exit(2)
    });
    std::env::set_current_dir(&tree).expect("chdir to the tree");
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(256 << 20);
    if let Some(j) = args.jobs {
        pool = pool.num_threads(j);
    }
    let pool = pool.build().expect("thread pool");
    let mut gens = Vec::new();
    let mut ruffs = Vec::new();
    let mut diffs = Vec::new();
    for i in 0..args.runs {
        let t = pool.install(|| run_once(&args, &tree));
        if args.once {
            if args.with_ruff {
                println!("{:.3} {:.3} {:.3}", t.gen_ms, t.ruff_ms, t.diff_ms);
            } else {
                println!("{:.3}", t.gen_ms);
            }
            return;
        }
        if args.with_ruff {
            println!(
                "run {}: T_gen {:.1} ms, ruff {:.1} ms, diffs {:.1} ms ({} configs, {} generated lines before ruff)",
                i + 1,
                t.gen_ms,
                t.ruff_ms,
                t.diff_ms,
                t.configs,
                t.lines
            );
        } else {
            println!(
                "run {}: T_gen {:.1} ms ({} configs, {} generated lines before ruff)",
                i + 1,
                t.gen_ms,
                t.configs,
                t.lines
            );
        }
        gens.push(t.gen_ms);
        ruffs.push(t.ruff_ms);
        diffs.push(t.diff_ms);
    }
    println!("median T_gen {:.1} ms over {} runs", median(gens), args.runs);
    if args.with_ruff {
        println!("median ruff {:.1} ms over {} runs", median(ruffs), args.runs);
        println!("median diffs {:.1} ms over {} runs", median(diffs), args.runs);
    }
}
