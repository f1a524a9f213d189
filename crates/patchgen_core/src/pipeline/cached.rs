//! Configs through the result cache (`patchgen_cache`): the key and the
//! entry of one config, and whether the files on disk are what an entry
//! says the config produces.
//!
//! An entry is keyed by the config module, the config name and the `-o`
//! directory; its inputs are [`Job::inputs`] (what the output was computed
//! from); its payload is [`Expected`]: the digests of the expected `.py`
//! and `.diff` and what the printers show for a config (paths, line counts,
//! warnings, the plan summary), so a hit prints what a miss would.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Context, Generated, Job};
use patchgen_cache::probe::{content_digest, identity};
use patchgen_cache::{Cache, Digest, Input, Key, Lookup, NotStored, Probe, Prober};
use patchgen_config::PatchPlan;

/// What a config's cache entry holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Expected {
    pub py_path: PathBuf,
    pub diff_path: PathBuf,
    /// Digest of the expected `.py` text.
    pub py: Digest,
    /// Digest of the expected `.diff` text.
    pub diff: Digest,
    pub py_lines: usize,
    pub diff_lines: usize,
    /// The config's warnings and notes.
    pub diagnostics: Vec<patchgen_diagnostics::Diagnostic>,
    pub injected: Vec<String>,
    pub upstream_origin: PathBuf,
    pub upstream_lines: usize,
    pub patches: usize,
    /// The plan summary `-v` prints when generating ([`plan_summary`]).
    pub summary: String,
}

impl Expected {
    pub fn of(g: &Generated) -> Expected {
        Expected {
            py_path: g.py_path.clone(),
            diff_path: g.diff_path.clone(),
            py: text_digest(&g.py),
            diff: text_digest(&g.diff),
            py_lines: patchgen_python::pytext::count_lines(&g.py),
            diff_lines: patchgen_python::pytext::count_lines(&g.diff),
            diagnostics: g.diagnostics.clone(),
            injected: g.injected.clone(),
            upstream_origin: g.upstream_origin.clone(),
            upstream_lines: g.upstream_lines,
            patches: g.plan.patches.len(),
            summary: plan_summary(&g.plan),
        }
    }
}

fn text_digest(text: &str) -> Digest {
    content_digest(text.as_bytes())
}

/// How the files on disk are compared with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// As the drift gate compares (`check::read_text`: newlines
    /// normalised, a missing file is empty; the `.diff` right-stripped).
    AsCheck,
    /// Byte for byte, as generation would write them (`diff`: also the
    /// `.diff`).
    Written { diff: bool },
}

/// Why the files on disk are not those a cache entry describes.
#[derive(Debug, thiserror::Error)]
pub enum NotOnDisk {
    #[error("{} differs from the cached result", .0.display())]
    Differs(PathBuf),
    #[error("{}: {error}", path.display())]
    Unreadable { path: PathBuf, error: std::io::Error },
}

/// Whether the files on disk are those `expected` describes; `Err` names
/// the first that is not (or cannot be read).
pub fn on_disk(expected: &Expected, how: Compare, prober: &Prober) -> Result<(), NotOnDisk> {
    let differs = |p: &Path| NotOnDisk::Differs(p.to_path_buf());
    fn unreadable(p: &Path) -> impl FnOnce(std::io::Error) -> NotOnDisk + '_ {
        move |error| NotOnDisk::Unreadable { path: p.to_path_buf(), error }
    }
    // The expected texts have no `\r` and are their own normal form (a
    // `.diff` is right-stripped line by line), so files whose bytes are
    // exactly those texts compare equal either way: tried first, without
    // reading the files into memory.
    let same_bytes = |path: &Path, digest: Digest| prober.file_digest(path).is_ok_and(|d| d == digest);
    if same_bytes(&expected.py_path, expected.py)
        && (how == Compare::Written { diff: false } || same_bytes(&expected.diff_path, expected.diff))
    {
        return Ok(());
    }
    match how {
        Compare::AsCheck => {
            let py = crate::check::read_text(&expected.py_path).map_err(unreadable(&expected.py_path))?;
            if text_digest(&py) != expected.py {
                return Err(differs(&expected.py_path));
            }
            let diff = crate::check::read_text(&expected.diff_path).map_err(unreadable(&expected.diff_path))?;
            if text_digest(&super::strip_trailing_ws(&diff)) != expected.diff {
                return Err(differs(&expected.diff_path));
            }
        }
        Compare::Written { diff } => {
            let mut files = vec![(&expected.py_path, expected.py)];
            if diff {
                files.push((&expected.diff_path, expected.diff));
            }
            for (path, digest) in files {
                let bytes = patchgen_cache::bounded::read(path, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
                    .map_err(unreadable(path))?;
                if content_digest(&bytes) != digest {
                    return Err(differs(path));
                }
            }
        }
    }
    Ok(())
}

impl Context {
    /// The cache key of a config.
    pub fn cache_key(&self, module: &str, config_name: &str, output_dir: Option<&Path>) -> Key {
        let out = output_dir.map(|d| d.display().to_string()).unwrap_or_default();
        Key::new("generate", [module.to_string(), config_name.to_string(), out])
    }

    /// The inputs every config of this run shares: patchgen's build, the
    /// effective settings, the working directory, the search path, the ruff
    /// binary. The values among them are computed once per run.
    pub fn run_inputs(&self) -> &Arc<Vec<Input>> {
        self.run_inputs.get_or_init(|| {
            let exe = std::env::current_exe().map(|p| identity(&p).hex()).unwrap_or_default();
            let mut inputs = vec![
                Input::value("patchgen build", &format!("{} {exe}", patchgen_cache::version())),
                Input::value("[tool.patchgen] settings", &format!("{:?}", self.project.settings)),
                Input::value("ruff options", &format!("{:?} {:?}", self.ruff.extra_ignore, self.ruff.isolated)),
                Input::value("working directory", &self.cwd.display().to_string()),
                Input::value("upstream search path", &self.search.describe()),
            ];
            inputs.extend(self.ruff.binary_inputs(&self.recorder));
            Arc::new(inputs)
        })
    }

    /// A prober that looks at everything afresh (for a lookup, or to check
    /// before storing that nothing changed while generating), taking file
    /// contents through `cache`'s remembered digests.
    pub fn fresh_prober(&self, cache: &Cache) -> Prober {
        let values: HashMap<String, Digest> = self
            .run_inputs()
            .iter()
            .filter_map(|i| match &i.probe {
                Probe::Value { name } => Some((name.clone(), i.digest)),
                _ => None,
            })
            .collect();
        cache.prober(values)
    }

    /// The entry of a config, if every input is unchanged.
    pub fn lookup(&self, cache: &Cache, key: &Key, prober: &Prober) -> Lookup<Expected> {
        cache.lookup(key, prober)
    }

    /// Store a generated config's entry (`prober` fresh since generation
    /// ended).
    pub fn store(&self, cache: &Cache, key: &Key, g: &Generated, prober: &Prober) -> Result<(), NotStored> {
        if !g.inputs_recorded {
            return Err(NotStored::Unrecorded("its inputs were"));
        }
        cache.store(key, &g.inputs, &Expected::of(g), prober)
    }
}

/// The plan summary printed by `-v` when generating (ends with a newline).
pub fn plan_summary(plan: &PatchPlan) -> String {
    use std::fmt::Write;
    let rule = "=".repeat(70);
    let mut s = String::new();
    let _ = writeln!(s, "\n{rule}\nPATCH CONFIGURATION SUMMARY\n{rule}");
    let _ = writeln!(s, "\nSource: {}", plan.source_module);
    let _ = writeln!(s, "Target: {}", plan.target_file);
    if !plan.description.is_empty() {
        let _ = writeln!(s, "Description: {}", plan.description);
    }
    let _ = writeln!(s, "\nPatches ({}):", plan.patches.len());
    for p in &plan.patches {
        let _ = writeln!(s, "  • [{}] {}", p.patch_type.value(), p.target);
        if let Some(d) = p.description.as_ref().filter(|d| !d.is_empty()) {
            let _ = writeln!(s, "    └─ {d}");
        }
    }
    if !plan.exclude.is_empty() {
        let _ = writeln!(s, "\nExcluded: {}", plan.exclude.join(", "));
    }
    if !plan.additional_imports.is_empty() {
        let _ = writeln!(s, "\nAdditional imports: {}", plan.additional_imports.len());
    }
    let _ = writeln!(s, "{rule}");
    s
}

/// A config's result in a cached run.
pub enum Produced {
    /// Generated now.
    Fresh(Box<Generated>),
    /// Found in the cache, with the files on disk as it says.
    Cached(Box<Expected>),
}

/// What the cache did for one config (for `-v`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// No cache in use (`--no-cache`).
    Off,
    /// The cache could not be used (why).
    Unavailable(String),
    Hit,
    /// Generated: why there was no hit, and whether the new entry was
    /// stored (`None`) or why not.
    Miss {
        why: String,
        not_stored: Option<String>,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Off => write!(f, "off"),
            Note::Unavailable(why) => write!(f, "off: {why}"),
            Note::Hit => write!(f, "hit"),
            Note::Miss { why, not_stored } => {
                write!(f, "miss: {why}")?;
                match not_stored {
                    Some(reason) => write!(f, "; {reason}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// How a run uses the cache.
#[derive(Clone, Copy)]
pub struct Use<'a> {
    pub cache: &'a Cache,
    /// How a hit is confirmed against the files on disk.
    pub compare: Compare,
}

impl Context {
    /// [`Context::generate_many_expecting`] (or, with `output_dir`, one
    /// [`Context::generate`] per config) for the configs the cache cannot
    /// answer: a config whose entry is valid and whose files on disk are
    /// those the entry describes is [`Produced::Cached`] without being
    /// evaluated, generated or normalised; every other config is generated
    /// and its entry stored. Without a cache, every config is generated.
    pub fn generate_many_cached(
        &self,
        cache: Option<Use<'_>>,
        modules: &[String],
        config_name: &str,
        output_dir: Option<&Path>,
        expected: &(dyn Fn(&Job) -> Option<String> + Sync),
    ) -> Vec<(Result<Produced, super::Failure>, f64, Note)> {
        use rayon::prelude::*;
        // Inputs only a cache reads.
        self.record_inputs(cache.is_some());
        let keys: Vec<Key> = modules.iter().map(|m| self.cache_key(m, config_name, output_dir)).collect();
        let looked: Vec<Result<(Expected, f64), String>> = match cache {
            None => modules.iter().map(|_| Err(String::new())).collect(),
            Some(u) => {
                let prober = self.fresh_prober(u.cache);
                crate::timings::mark("run inputs");
                keys.par_iter()
                    .map(|key| {
                        let start = std::time::Instant::now();
                        match self.lookup(u.cache, key, &prober) {
                            Lookup::Hit(e) => match on_disk(&e, u.compare, &prober) {
                                Ok(()) => Ok((e, start.elapsed().as_secs_f64())),
                                Err(why) => Err(why.to_string()),
                            },
                            Lookup::Miss(m) => Err(m.to_string()),
                        }
                    })
                    .collect()
            }
        };
        crate::timings::mark("cache looked up");
        let misses: Vec<String> =
            modules.iter().zip(&looked).filter(|(_, l)| l.is_err()).map(|(m, _)| m.clone()).collect();
        let mut fresh = match output_dir {
            None => self.generate_many_expecting(&misses, config_name, expected),
            Some(dir) => misses
                .iter()
                .map(|m| {
                    let start = std::time::Instant::now();
                    let r = self.generate(m, config_name, Some(dir));
                    (r, start.elapsed().as_secs_f64())
                })
                .collect(),
        }
        .into_iter();
        let paired: Vec<_> = looked
            .into_iter()
            .zip(&keys)
            .map(|(l, key)| match l {
                Ok((e, secs)) => (Ok(Produced::Cached(Box::new(e))), secs, Ok(()), key),
                Err(why) => {
                    let (result, secs) = fresh.next().expect("one result per miss");
                    (result.map(|g| Produced::Fresh(Box::new(g))), secs, Err(why), key)
                }
            })
            .collect();
        // Entries are stored in parallel, each input looked at again (once
        // per run) now that generation has ended.
        let store_prober = cache.map(|u| self.fresh_prober(u.cache));
        let out: Vec<_> = paired
            .into_par_iter()
            .map(|(result, secs, looked, key)| {
                let note = match (looked, cache, &store_prober, &result) {
                    (Ok(()), ..) => Note::Hit,
                    (Err(why), Some(u), Some(p), Ok(Produced::Fresh(g))) => {
                        let not_stored = self.store(u.cache, key, g, p).err().map(|e| e.to_string());
                        Note::Miss { why, not_stored }
                    }
                    (Err(why), Some(_), ..) => {
                        Note::Miss { why, not_stored: Some("not cached: the config failed".into()) }
                    }
                    (Err(_), None, ..) => Note::Off,
                };
                (result, secs, note)
            })
            .collect();
        if let Some(u) = cache {
            u.cache.save_files();
        }
        crate::timings::mark("cache stored");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    /// A project whose upstream module sits at its root (on the search
    /// path as the working directory), with a `ruff.toml` next to the
    /// config: one of ruff's settings files.
    fn project() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("pyproject.toml", "[tool.patchgen]\nsearch_root = \"pkg\"\npackage_prefix = \"pkg\"\n"),
            ("toylib/__init__.py", ""),
            ("toylib/modeling_toy.py", "class Norm:\n    def forward(self, x):\n        return x\n"),
            ("pkg/__init__.py", ""),
            ("pkg/toy/__init__.py", ""),
            ("pkg/toy/ruff.toml", "line-length = 100\n"),
            (
                "pkg/toy/toy_patch_gen_config.py",
                "from patchgen import PatchConfig\n\nconfig = PatchConfig(source_module=\"toylib.modeling_toy\", target_file=\"patched_toy.py\")\n",
            ),
        ];
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let project = Project::find(dir.path()).unwrap();
        let ctx = Context::new(project, dir.path(), None, &crate::settings::Env::capture());
        (dir, ctx)
    }

    fn recorded_settings(job: &Job) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = job.inputs.shared[3..]
            .iter()
            .flat_map(|group| group.iter())
            .filter_map(|i| i.probe.path().map(Path::to_path_buf))
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn inputs_are_recorded_only_for_a_cache() {
        let (dir, ctx) = project();
        let off = ctx.generate_raw("pkg.toy.toy_patch_gen_config", "config", None).unwrap();
        assert!(!off.job.inputs_recorded);
        assert!(off.job.inputs.own.is_empty());
        assert!(recorded_settings(&off.job).is_empty());

        ctx.record_inputs(true);
        let on = ctx.generate_raw("pkg.toy.toy_patch_gen_config", "config", None).unwrap();
        assert!(on.job.inputs_recorded);
        let ruff_toml = dir.path().join("pkg/toy/ruff.toml").canonicalize().unwrap();
        let seen = recorded_settings(&on.job);
        assert!(
            seen.iter().any(|p| p.canonicalize().ok().as_deref() == Some(&ruff_toml)),
            "{ruff_toml:?} not among {seen:?}"
        );
        // The config file read is an input; the output is the same either way.
        let config = dir.path().join("pkg/toy/toy_patch_gen_config.py").canonicalize().unwrap();
        assert!(
            on.job
                .inputs
                .own
                .iter()
                .any(|i| i.probe.path().and_then(|p| p.canonicalize().ok()) == Some(config.clone()))
        );
        assert_eq!(off.text, on.text);
    }
}
