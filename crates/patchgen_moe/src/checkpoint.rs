//! A checkpoint's tensors, from its headers: a directory with
//! `model.safetensors.index.json` (`{"metadata": {"total_size": N},
//! "weight_map": {name: file}}`), a directory with one `model.safetensors`
//! (or, failing both, every `*.safetensors` in it), or one `.safetensors`
//! file. Shard headers are read in parallel; an index naming a missing file,
//! or a tensor its shard does not hold, is a located error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::header::{Header, TensorInfo, read_header};

pub const INDEX: &str = "model.safetensors.index.json";
pub const SINGLE: &str = "model.safetensors";

/// Every shard's header and where each tensor is.
pub struct Checkpoint {
    /// The directory (the file's directory for a single file).
    pub dir: PathBuf,
    /// The index file, when there is one.
    pub index: Option<PathBuf>,
    pub shards: Vec<Header>,
    /// name → (shard, position in the shard's `tensors`).
    pub by_name: HashMap<String, (usize, usize)>,
}

impl Checkpoint {
    /// Open the checkpoint at `path`: a directory (with an index, a single
    /// `model.safetensors`, or `.safetensors` files) or one file.
    pub fn open(path: &Path) -> Result<Checkpoint, crate::error::MoeError> {
        Checkpoint::open_local(path).map_err(crate::error::MoeError::Checkpoint)
    }

    fn open_local(path: &Path) -> Result<Checkpoint, String> {
        if path.is_file() {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let h = read_header(path).map_err(|e| e.to_string())?;
            return Checkpoint::from_shards(dir, None, vec![h]);
        }
        if !path.is_dir() {
            return Err(format!("{}: no such file or directory", path.display()));
        }
        let index = path.join(INDEX);
        if index.is_file() {
            return Checkpoint::from_index(path, &index);
        }
        let single = path.join(SINGLE);
        let files: Vec<PathBuf> = if single.is_file() {
            vec![single]
        } else {
            let mut f: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
                .collect();
            f.sort();
            f
        };
        if files.is_empty() {
            return Err(format!(
                "{}: no {INDEX}, no {SINGLE} and no .safetensors file\n  help: pass a checkpoint directory or a .safetensors file",
                path.display()
            ));
        }
        let shards = read_all(&files)?;
        Checkpoint::from_shards(path.to_path_buf(), None, shards)
    }

    fn from_index(dir: &Path, index: &Path) -> Result<Checkpoint, String> {
        let text = std::fs::read_to_string(index).map_err(|e| format!("{}: {e}", index.display()))?;
        let (files, wanted) = parse_index(index, &text)?;
        let missing: Vec<&String> = files.iter().filter(|f| !dir.join(f).is_file()).collect();
        if !missing.is_empty() {
            return Err(missing_files(index, &missing));
        }
        let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
        let shards = read_all(&paths)?;
        let ck = Checkpoint::from_shards(dir.to_path_buf(), Some(index.to_path_buf()), shards)?;
        ck.check_weight_map(index, &wanted)?;
        Ok(ck)
    }

    /// Every `(tensor, file)` of the weight map is in that file's header.
    pub(crate) fn check_weight_map(&self, index: &Path, wanted: &[(String, String)]) -> Result<(), String> {
        for (name, file) in wanted {
            let ok =
                self.by_name.get(name).is_some_and(|&(s, _)| self.shards[s].path.file_name() == Some(file.as_ref()));
            if !ok {
                return Err(format!(
                    "{}: weight_map says \"{name}\" is in {file}, but that file's header has no such tensor",
                    index.display()
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn from_shards(dir: PathBuf, index: Option<PathBuf>, shards: Vec<Header>) -> Result<Checkpoint, String> {
        let mut by_name: HashMap<String, (usize, usize)> =
            HashMap::with_capacity(shards.iter().map(|s| s.tensors.len()).sum());
        for (si, s) in shards.iter().enumerate() {
            for (ti, t) in s.tensors.iter().enumerate() {
                if let Some((other, _)) = by_name.insert(t.name.clone(), (si, ti)) {
                    return Err(format!(
                        "{}: tensor \"{}\" is also in {}: a checkpoint holds each tensor once",
                        s.path.display(),
                        t.name,
                        shards[other].path.display()
                    ));
                }
            }
        }
        Ok(Checkpoint { dir, index, shards, by_name })
    }

    pub fn tensor(&self, name: &str) -> Option<(usize, &TensorInfo)> {
        let &(s, t) = self.by_name.get(name)?;
        Some((s, &self.shards[s].tensors[t]))
    }

    /// Every tensor, shard by shard in data order.
    pub fn tensors(&self) -> impl Iterator<Item = (usize, &TensorInfo)> {
        self.shards.iter().enumerate().flat_map(|(i, s)| s.tensors.iter().map(move |t| (i, t)))
    }

    pub fn tensor_count(&self) -> usize {
        self.by_name.len()
    }

    pub fn total_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.tensors.iter().map(TensorInfo::len).sum::<u64>()).sum()
    }
}

/// An index's `(tensor, file)` pairs.
pub(crate) type WeightMap = Vec<(String, String)>;

/// The files an index names (sorted, once each) and its `(tensor, file)`
/// pairs; `index` names it in errors.
pub(crate) fn parse_index(index: &Path, text: &str) -> Result<(Vec<String>, WeightMap), String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("{}:{}:{}: invalid JSON: {e}", index.display(), e.line(), e.column()))?;
    let Some(map) = value.get("weight_map").and_then(|m| m.as_object()) else {
        return Err(format!("{}: no \"weight_map\" object", index.display()));
    };
    let mut files: Vec<String> = Vec::new();
    let mut wanted: Vec<(String, String)> = Vec::with_capacity(map.len());
    for (name, file) in map {
        let Some(file) = file.as_str() else {
            return Err(format!("{}: weight_map[\"{name}\"] is not a file name", index.display()));
        };
        wanted.push((name.clone(), file.to_string()));
        files.push(file.to_string());
    }
    files.sort();
    files.dedup();
    Ok((files, wanted))
}

/// The error for an index naming files that are not there.
pub(crate) fn missing_files(index: &Path, missing: &[&String]) -> String {
    let shown: Vec<&str> = missing.iter().take(5).map(|s| s.as_str()).collect();
    format!(
        "{}: the index names {} missing file(s): {}{}\n  help: download the missing shards, or fix the index",
        index.display(),
        missing.len(),
        shown.join(", "),
        if missing.len() > 5 { ", ..." } else { "" }
    )
}

fn read_all(files: &[PathBuf]) -> Result<Vec<Header>, String> {
    let results: Vec<_> = files.par_iter().map(|f| read_header(f)).collect();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(r.map_err(|e| e.to_string())?);
    }
    Ok(out)
}
