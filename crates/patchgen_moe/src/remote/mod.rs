//! `moe inspect|convert` on checkpoints where they live: the Hugging Face
//! Hub (`hf://`), S3, GCS, Azure and plain HTTP(S), all through the
//! `object_store` crate (`url` parses the addresses, `store` is the
//! synchronous face over one store, `open` reads a checkpoint's headers by
//! range reads, `transfer` converts with either end remote).
//!
//! Contract: a plain path is local and goes the local way unchanged (same
//! code, same speed, same bytes); a URL never downloads tensor data to
//! inspect; a conversion writes the destination so that a reader never sees
//! a half-written checkpoint (local: a temporary directory renamed at the
//! end; a bucket: shards first, the index last); every failure is an error
//! naming the file's URL. `--offline` (or `HF_HUB_OFFLINE=1`) touches no
//! network: an `hf://` address then resolves to the local Hub cache
//! (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`)
//! and any other URL is an error.

pub mod error;
pub mod hub;
pub mod open;
pub mod store;
pub mod transfer;
pub mod url;

use std::path::{Path, PathBuf};

use patchgen_core::settings::Env;

pub use error::RemoteError;
pub use store::Remote;
pub use url::RemoteUrl;

use super::inspect::{InspectReport, UpstreamArg};
use super::report::human_bytes;

/// Where a checkpoint argument points.
pub enum Location {
    Local(PathBuf),
    Remote(Box<Remote>),
}

/// Whether the Hub's offline switch is on.
fn hub_offline_env(env: &Env) -> bool {
    env.var("HF_HUB_OFFLINE").is_some_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "True" | "yes"))
}

/// Resolve a command-line argument: a local path, or a remote store
/// configured from `env` (no request is made).
pub fn locate(arg: &Path, offline: bool, env: &Env) -> Result<Location, RemoteError> {
    let Some(text) = arg.to_str() else { return Ok(Location::Local(arg.to_path_buf())) };
    let url = match RemoteUrl::parse(text) {
        Ok(Some(u)) => u,
        Ok(None) => return Ok(Location::Local(arg.to_path_buf())),
        Err(e) => return Err(RemoteError::Other { url: e.url, message: e.message }),
    };
    let offline = offline || (hub_offline_env(env) && matches!(url.place, url::Place::Hub { .. }));
    if offline {
        return hub_cache(&url, env).map(Location::Local);
    }
    Ok(Location::Remote(Box::new(Remote::connect(&url, env)?)))
}

/// The snapshot directory of an `hf://` address in the local Hub cache.
fn hub_cache(url: &RemoteUrl, env: &Env) -> Result<PathBuf, RemoteError> {
    let url::Place::Hub { repo, revision, subdir } = &url.place else {
        return Err(RemoteError::Offline {
            url: url.to_string(),
            why: "a remote address cannot be read without the network (only hf:// ones resolve to the local Hub cache)"
                .into(),
        });
    };
    let env = |k: &str| env.var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = env("HF_HUB_CACHE")
        .or_else(|| env("HF_HOME").map(|h| h.join("hub")))
        .unwrap_or_else(|| env("HOME").unwrap_or_default().join(".cache").join("huggingface").join("hub"));
    let model = cache.join(format!("models--{}", repo.replace('/', "--")));
    let commit = std::fs::read_to_string(model.join("refs").join(revision))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| revision.clone());
    // A ref file holds a commit hash; anything that could climb is refused.
    if commit.is_empty() || matches!(commit.as_str(), "." | "..") || commit.contains(['/', '\\']) {
        return Err(RemoteError::Offline {
            url: url.to_string(),
            why: format!("the Hub cache's ref `{revision}` holds `{commit}`, not a commit"),
        });
    }
    let mut dir = model.join("snapshots").join(commit);
    if !subdir.is_empty() {
        dir = dir.join(subdir);
    }
    if !dir.is_dir() {
        return Err(RemoteError::Offline {
            url: url.to_string(),
            why: format!(
                "not in the local Hub cache ({} does not exist)\n  help: download it first (`hf download {repo}`), or drop --offline",
                dir.display()
            ),
        });
    }
    Ok(match &url.file {
        Some(f) => dir.join(f),
        None => dir,
    })
}

/// `moe inspect` on a remote checkpoint: headers, index and `config.json`
/// by range reads (or `config` when given, a local file).
pub fn inspect(
    remote: &Remote,
    config: Option<&Path>,
    upstream: UpstreamArg,
    cwd: &Path,
) -> Result<InspectReport, RemoteError> {
    let (opened, dims) = store::block_on(async {
        let dims = async {
            match config {
                Some(c) => super::config::MoeDims::load(c).map(Some).map_err(RemoteError::from),
                None => open::config(remote).await,
            }
        };
        futures::future::try_join(open::open(remote), dims).await
    })??;
    let mut report = super::inspect::report(open::label(remote), &opened.ck, dims, upstream, cwd);
    report.bytes_read = Some(remote.bytes_read());
    report.transfer_note = Some(format!(
        "fetched: {} in {} ranged read(s) (headers, index, config.json; no tensor data)",
        human_bytes(remote.bytes_read()),
        remote.reads()
    ));
    Ok(report)
}
