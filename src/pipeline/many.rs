//! [`Context::generate_many`]: many configs at once, with ruff batched.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::{Context, Failure, Generated, Raw};

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
    pub fn generate_many(
        &self,
        modules: &[String],
        config_name: &str,
    ) -> Vec<(Result<Generated, Failure>, f64)> {
        let raws: Vec<(Result<Raw, Failure>, f64)> = modules
            .par_iter()
            .map(|m| {
                let start = Instant::now();
                let raw = self.generate_raw(m, config_name, None);
                (raw, start.elapsed().as_secs_f64())
            })
            .collect();
        let start = Instant::now();
        let items: Vec<(&str, &Path)> = raws
            .iter()
            .filter_map(|(r, _)| r.as_ref().ok())
            .map(|raw| (raw.text.as_str(), raw.abs_target.as_path()))
            .collect();
        let mut normalized = self
            .ruff
            .normalize_many(&items, rayon::current_num_threads())
            .into_iter();
        // Each config's share of the shared normalisation.
        let ruff_secs = start.elapsed().as_secs_f64() / items.len().max(1) as f64;
        let jobs: Vec<_> = raws
            .into_iter()
            .map(|(r, secs)| match r {
                Ok(raw) => {
                    let py = normalized.next().expect("one result per file");
                    (Ok((raw, py)), secs + ruff_secs)
                }
                Err(f) => (Err(f), secs),
            })
            .collect();
        jobs.into_par_iter()
            .map(|(r, secs)| {
                let start = Instant::now();
                let result = match r {
                    Ok((raw, Ok(py))) => Ok(raw.finish(py)),
                    Ok((raw, Err(error))) => Err(Failure::Ruff {
                        py_path: raw.job.py_path,
                        error,
                    }),
                    Err(f) => Err(f),
                };
                (result, secs + start.elapsed().as_secs_f64())
            })
            .collect()
    }
}
