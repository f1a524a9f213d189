//! [`Context::generate_many`]: many configs at once, with ruff batched.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::{Context, Failure, Generated, Job, Raw};

impl Context {
    /// Generate many configs, each exactly as [`Context::generate`] would,
    /// in order: evaluation and generation in parallel on the current rayon
    /// pool, then ruff for all of them at once (`Ruff::normalize_many`
    /// batches what it can do exactly that way), then the diffs in
    /// parallel. The `f64` is the config's own generation and diff time
    /// plus an equal share of the normalisation, in seconds.
    ///
    /// Starting ruff on early configs while later ones are generated was
    /// measured and not kept: ruff already keeps the cores busy, and each
    /// extra batch costs two more ruff processes (`docs/performance.md`).
    pub fn generate_many(&self, modules: &[String], config_name: &str) -> Vec<(Result<Generated, Failure>, f64)> {
        self.generate_many_expecting(modules, config_name, &|_| None)
    }

    /// [`Context::generate_many`], told what each config's `.py` is
    /// expected to be: `expected(job)` (the drift gate passes the
    /// checked-in file). While ruff runs, which leaves part of the cores
    /// idle, the `.diff` of each expected text is taken on the spare cores;
    /// when ruff's output is that text, as in an up-to-date tree, its
    /// `.diff` is then ready. The result is the same either way: a `.diff`
    /// depends only on the `.py` text and the upstream module.
    pub fn generate_many_expecting(
        &self,
        modules: &[String],
        config_name: &str,
        expected: &(dyn Fn(&Job) -> Option<String> + Sync),
    ) -> Vec<(Result<Generated, Failure>, f64)> {
        let raws: Vec<(Result<Raw, Failure>, f64)> = modules
            .par_iter()
            .map(|m| {
                let start = Instant::now();
                let raw = self.generate_raw(m, config_name, None);
                (raw, start.elapsed().as_secs_f64())
            })
            .collect();
        crate::timings::mark("generated");
        let start = Instant::now();
        let items: Vec<(&str, &Path)> = raws
            .iter()
            .filter_map(|(r, _)| r.as_ref().ok())
            .map(|raw| (raw.text.as_str(), raw.abs_target.as_path()))
            .collect();
        let (normalized, guesses) = rayon::join(
            || self.ruff.normalize_many(&items, rayon::current_num_threads()),
            || {
                raws.par_iter()
                    .map(|(r, _)| r.as_ref().ok().and_then(|raw| Some(raw.guess(expected(&raw.job)?))))
                    .collect::<Vec<_>>()
            },
        );
        let mut normalized = normalized.into_iter();
        // Each config's share of the shared normalisation.
        let ruff_secs = start.elapsed().as_secs_f64() / items.len().max(1) as f64;
        let jobs: Vec<_> = raws
            .into_iter()
            .zip(guesses)
            .map(|((r, secs), guess)| match r {
                Ok(raw) => {
                    let py = normalized.next().expect("one result per file");
                    (Ok((raw, py, guess)), secs + ruff_secs)
                }
                Err(f) => (Err(f), secs),
            })
            .collect();
        let done = jobs
            .into_par_iter()
            .map(|(r, secs)| {
                let start = Instant::now();
                let result = match r {
                    Ok((raw, Ok(py), guess)) => Ok(raw.finish_guessed(py, guess)),
                    Ok((raw, Err(error), _)) => Err(self.ruff_failure(&raw, error)),
                    Err(f) => Err(f),
                };
                (result, secs + start.elapsed().as_secs_f64())
            })
            .collect();
        crate::timings::mark("diffs");
        done
    }
}
