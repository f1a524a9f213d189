//! A remote checkpoint opened by range reads: the index (or one
//! `model.safetensors`, or for a bucket every `*.safetensors` listed), then
//! per shard one ranged GET of the first [`HEAD_READ`] bytes (the 8-byte
//! length and, nearly always, the whole header) and a second one only for a
//! header longer than that — never a byte of tensor data beyond it. Shards
//! are read [`POOL`] at a time. Errors are the local ones (same checks, same
//! words) with URLs in place of paths.

use std::path::{Path, PathBuf};

use futures::StreamExt;

use super::error::RemoteError;
use super::store::Remote;
use crate::checkpoint::{Checkpoint, INDEX, SINGLE, missing_files, parse_index};
use crate::config::MoeDims;
use crate::header::{Header, HeaderError, MAX_HEADER, parse_header};

/// Bytes asked for in a shard's first request.
pub const HEAD_READ: u64 = 64 * 1024;
/// Shards whose headers are fetched at once.
pub const POOL: usize = 16;

/// An opened remote checkpoint: shard `i` of `ck` is the file `names[i]`.
pub struct Opened {
    pub ck: Checkpoint,
    pub names: Vec<String>,
}

/// Open the checkpoint at `remote`.
pub async fn open(remote: &Remote) -> Result<Opened, RemoteError> {
    let dir = PathBuf::from(remote.url.dir());
    if let Some(file) = &remote.url.file {
        let h = shard_header(remote, file).await?;
        let ck = Checkpoint::from_shards(dir, None, vec![h]).map_err(RemoteError::Checkpoint)?;
        return Ok(Opened { ck, names: vec![file.clone()] });
    }
    if let Some(text) = remote.get_all(INDEX).await? {
        let index = PathBuf::from(remote.display(INDEX));
        let text = String::from_utf8_lossy(&text);
        let (files, wanted) = parse_index(&index, &text).map_err(RemoteError::Checkpoint)?;
        let results: Vec<Result<Header, RemoteError>> =
            futures::stream::iter(files.iter()).map(|f| shard_header(remote, f)).buffered(POOL).collect().await;
        let missing: Vec<&String> = files
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.as_ref().is_err_and(RemoteError::is_not_found))
            .map(|(f, _)| f)
            .collect();
        if !missing.is_empty() {
            return Err(RemoteError::Checkpoint(missing_files(&index, &missing)));
        }
        let shards = results.into_iter().collect::<Result<Vec<Header>, RemoteError>>()?;
        let ck = Checkpoint::from_shards(dir, Some(index.clone()), shards).map_err(RemoteError::Checkpoint)?;
        ck.check_weight_map(&index, &wanted).map_err(RemoteError::Checkpoint)?;
        return Ok(Opened { ck, names: files });
    }
    match shard_header(remote, SINGLE).await {
        Ok(h) => {
            let ck = Checkpoint::from_shards(dir, None, vec![h]).map_err(RemoteError::Checkpoint)?;
            return Ok(Opened { ck, names: vec![SINGLE.into()] });
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    let none = || {
        RemoteError::Checkpoint(format!(
            "{}: no {INDEX}, no {SINGLE}{}\n  help: name a checkpoint directory or a .safetensors file",
            remote.url.dir(),
            if remote.url.can_list() { " and no .safetensors file" } else { "" }
        ))
    };
    if !remote.url.can_list() {
        return Err(none());
    }
    let (listed, _) = remote.list().await?;
    let mut files: Vec<String> = listed.into_iter().map(|(n, _)| n).filter(|n| n.ends_with(".safetensors")).collect();
    files.sort();
    if files.is_empty() {
        return Err(none());
    }
    let results: Vec<Result<Header, RemoteError>> =
        futures::stream::iter(files.iter()).map(|f| shard_header(remote, f)).buffered(POOL).collect().await;
    let shards = results.into_iter().collect::<Result<Vec<Header>, RemoteError>>()?;
    let ck = Checkpoint::from_shards(dir, None, shards).map_err(RemoteError::Checkpoint)?;
    Ok(Opened { ck, names: files })
}

/// `config.json` next to the checkpoint (or the one file), when there is one.
pub async fn config(remote: &Remote) -> Result<Option<MoeDims>, RemoteError> {
    let Some(bytes) = remote.get_all("config.json").await? else { return Ok(None) };
    let path = PathBuf::from(remote.display("config.json"));
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        RemoteError::Checkpoint(format!("{}:{}:{}: invalid JSON: {e}", path.display(), e.line(), e.column()))
    })?;
    let dims = MoeDims::from_value(&path, &v).map_err(RemoteError::from)?;
    dims.check_sizes().map_err(RemoteError::Checkpoint)?;
    Ok(Some(dims))
}

/// The validated header of shard `name`.
pub async fn shard_header(remote: &Remote, name: &str) -> Result<Header, RemoteError> {
    let (head, size) = remote.read_head(name, HEAD_READ).await?;
    let path = PathBuf::from(remote.display(name));
    let bad = |e: HeaderError| RemoteError::Checkpoint(e.to_string());
    if head.len() < 8 {
        return Err(bad(HeaderError {
            path,
            place: String::new(),
            message: format!("{size} bytes: too short for a safetensors file (8-byte header length first)"),
        }));
    }
    let n = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
    if n > MAX_HEADER || n > size - 8 {
        // Fails on the length alone, before a byte more is fetched.
        return Err(bad(parse_header(&path, n, size, &[]).err().unwrap_or_else(|| HeaderError {
            path: path.clone(),
            place: "header length".into(),
            message: format!("{n} bytes: invalid"),
        })));
    }
    let end = 8 + n;
    if end <= head.len() as u64 {
        return parse_header(&path, n, size, &head[8..end as usize]).map_err(bad);
    }
    let rest = remote.read_range(name, head.len() as u64..end).await?;
    let mut json = Vec::with_capacity(n as usize);
    json.extend_from_slice(&head[8..]);
    json.extend_from_slice(&rest);
    parse_header(&path, n, size, &json).map_err(bad)
}

/// The `checkpoint` field of a remote report: its URL.
pub fn label(remote: &Remote) -> PathBuf {
    Path::new(&remote.url.to_string()).to_path_buf()
}
