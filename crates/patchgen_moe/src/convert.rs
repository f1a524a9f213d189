//! `patchgen moe convert SRC DST`: writes the plan (`plan.rs`) as a new
//! checkpoint, streaming. Each output shard is its header (`__metadata__`
//! `{"format": "pt"}`, JSON padded with spaces to a multiple of 8 bytes),
//! then its tensors' pieces copied file range to file range (`std::io::copy`
//! between files, which Linux turns into `copy_file_range`: no user-space
//! buffer) or, for transposed matrices, through one matrix buffer. Memory
//! does not grow with the checkpoint. Nothing is memory-mapped: that needs
//! `unsafe`, and mapped file pages would count in the resident set.
//!
//! Safe: refuses SRC == DST, DST inside SRC and a non-empty DST; writes into
//! a temporary directory next to DST and renames it at the end, so an
//! interrupted run leaves no DST. Durable when it returns: every file it
//! wrote is `fsync`ed, then the directory, and after the rename its parent.
//! A shard is sent to the disk every 8 MiB as it is written
//! ([`WRITEBACK_CHUNK`], by a second thread), so the disk writes while the
//! copy goes on and the shard's `fsync` waits for its last chunk only. Non-weight files of SRC are copied (not
//! `.safetensors .bin .pt .pth` nor the two index files). Several shards
//! are written by `--jobs` threads. `--verify` re-reads every output shard,
//! checks its header with the `safetensors` crate's parser and validation
//! (`tensor::Metadata`) and compares every tensor's bytes with its sources,
//! reporting the first mismatch.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use patchgen_core::progress::{Progress, Reporter};

use super::checkpoint::{Checkpoint, INDEX, SINGLE};
use super::config::MoeDims;
use super::error::{MoeError, SizeProblem};
use super::layout::groups;
use super::plan::{OutTensor, Piece, SourceLayout, Target, plan, shards};

pub struct ConvertOptions {
    pub to: Target,
    pub source_layout: Option<SourceLayout>,
    pub shard_size: u64,
    pub jobs: Option<usize>,
    pub verify: bool,
    /// Told the bytes to write and written (the binary draws a bar on a terminal).
    pub progress: Reporter,
}

#[derive(Serialize)]
pub struct ConvertReport {
    pub src: PathBuf,
    pub dst: PathBuf,
    pub to: Target,
    pub converted: Vec<(String, String)>,
    pub unchanged: usize,
    pub tensors: usize,
    pub shards: Vec<String>,
    pub bytes: u64,
    pub copied_files: Vec<String>,
    pub skipped_dirs: Vec<String>,
    pub seconds: f64,
    pub verified: bool,
    /// Bytes fetched from a remote SRC (and, with `--verify`, a remote DST).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_read: Option<u64>,
    /// Bytes uploaded to a remote DST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
}

/// Parse `5GB`, `500MB`, `1GiB`, `123` (bytes), as HF's `max_shard_size`.
pub fn parse_size(s: &str) -> Result<u64, MoeError> {
    parse_size_text(s).map_err(|problem| MoeError::ShardSize { given: s.to_string(), problem })
}

fn parse_size_text(s: &str) -> Result<u64, SizeProblem> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| SizeProblem::NotASize)?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KIB" => 1 << 10,
        "MIB" => 1 << 20,
        "GIB" => 1 << 30,
        "TIB" => 1 << 40,
        _ => return Err(SizeProblem::UnknownUnit),
    };
    let v = (n * mult as f64) as u64;
    if v == 0 {
        return Err(SizeProblem::Zero);
    }
    Ok(v)
}

/// Convert the local checkpoint `src` into `dst` (which must not exist or
/// be empty), written under a temporary directory and moved into place.
pub fn convert(src: &Path, dst: &Path, opts: &ConvertOptions) -> Result<ConvertReport, MoeError> {
    let start = Instant::now();
    let src_abs = patchgen_core::project::resolve(src);
    let dst_abs = patchgen_core::project::resolve(dst);
    if dst_abs == src_abs || dst_abs.starts_with(&src_abs) && src.is_dir() {
        return Err(MoeError::DstInSource { dst: dst.to_path_buf() });
    }
    refuse_non_empty(dst)?;
    let ck = Checkpoint::open(src)?;
    let config = if src.is_dir() { Some(src.join("config.json")).filter(|p| p.is_file()) } else { None };
    let dims = config.as_deref().map(MoeDims::load).transpose()?;
    let prepared = prepare(&ck, dims.as_ref(), src, opts)?;
    write_local(src, dst, &dst_abs, &ck, prepared, opts, start).map_err(MoeError::Output)
}

/// Write a prepared conversion of `ck` to `dst` (the output side of `convert`).
fn write_local(
    src: &Path,
    dst: &Path,
    dst_abs: &Path,
    ck: &Checkpoint,
    prepared: Prepared,
    opts: &ConvertOptions,
    start: Instant,
) -> Result<ConvertReport, String> {
    let Prepared { plan, cuts, names, total } = prepared;
    let n = cuts.len();

    let tmp = temporary_dir(dst, dst_abs)?;

    let bar = &*opts.progress;
    bar.start(total);
    let inputs: Vec<PathBuf> = ck.shards.iter().map(|s| s.path.clone()).collect();
    let write_one = |k: usize| -> Result<(), String> {
        let path = tmp.path().join(&names[k]);
        write_shard(&path, &plan.tensors[cuts[k].clone()], &inputs, bar)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(1).max(1))
        .build()
        .map_err(|e| format!("cannot start threads: {e}"))?;
    pool.install(|| (0..n).into_par_iter().map(write_one).collect::<Result<Vec<()>, String>>())?;
    bar.finish();

    if let Some(index) = index_of(&plan, &cuts, &names, total) {
        std::fs::write(tmp.path().join(INDEX), index).map_err(|e| format!("{INDEX}: {e}"))?;
    }
    let (copied_files, skipped_dirs) =
        if src.is_dir() { copy_other_files(src, tmp.path())? } else { (Vec::new(), Vec::new()) };
    // The shards synced themselves; the small files together (one journal
    // commit for all of them, not one each).
    for name in copied_files.iter().map(String::as_str).chain(Some(INDEX).filter(|_| n > 1)) {
        let path = tmp.path().join(name);
        File::open(&path).and_then(|f| f.sync_all()).map_err(|e| format!("{}: {e}", path.display()))?;
    }

    if opts.verify {
        pool.install(|| {
            (0..n)
                .into_par_iter()
                .map(|k| verify_shard(&tmp.path().join(&names[k]), &names[k], &plan.tensors[cuts[k].clone()], &inputs))
                .collect::<Result<Vec<()>, String>>()
        })?;
    }

    super::cancel::interrupted()?;
    commit(tmp, dst, dst_abs)?;
    let prepared = Prepared { plan, cuts: Vec::new(), names, total };
    Ok(ConvertReport::new(src, dst, opts, prepared, (copied_files, skipped_dirs), start))
}

impl ConvertReport {
    /// The report of a finished conversion (no remote transfer counts).
    pub(crate) fn new(
        src: &Path,
        dst: &Path,
        opts: &ConvertOptions,
        prepared: Prepared,
        (copied_files, skipped_dirs): (Vec<String>, Vec<String>),
        start: Instant,
    ) -> ConvertReport {
        let Prepared { plan, names, total, .. } = prepared;
        ConvertReport {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            to: opts.to,
            converted: plan.converted.iter().map(|(p, f)| (p.clone(), f.letter().to_string())).collect(),
            unchanged: plan.unchanged.len(),
            tensors: plan.tensors.len(),
            shards: names,
            bytes: total,
            copied_files,
            skipped_dirs,
            seconds: start.elapsed().as_secs_f64(),
            verified: opts.verify,
            bytes_read: None,
            bytes_written: None,
        }
    }
}

/// What a conversion writes: the plan, its cut into output shards, their
/// names and the bytes of tensor data.
pub(crate) struct Prepared {
    pub plan: super::plan::Plan,
    pub cuts: Vec<std::ops::Range<usize>>,
    pub names: Vec<String>,
    pub total: u64,
}

/// Plan the conversion of `ck` (named `src` in errors).
pub(crate) fn prepare(
    ck: &Checkpoint,
    dims: Option<&MoeDims>,
    src: &Path,
    opts: &ConvertOptions,
) -> Result<Prepared, MoeError> {
    let groups = groups(ck, dims);
    if groups.is_empty() {
        return Err(MoeError::Plan(format!(
            "{}: no routed experts (`<prefix>.experts.` tensors): nothing to convert",
            src.display()
        )));
    }
    let plan = plan(ck, &groups, opts.to, opts.source_layout)?;
    let cuts = shards(&plan.tensors, opts.shard_size);
    let n = cuts.len();
    let names: Vec<String> = if n == 1 {
        vec![SINGLE.to_string()]
    } else {
        (1..=n).map(|i| format!("model-{i:05}-of-{n:05}.safetensors")).collect()
    };
    let total: u64 = plan.tensors.iter().map(OutTensor::len).sum();
    Ok(Prepared { plan, cuts, names, total })
}

/// The index of a sharded output (`None` for one shard).
pub(crate) fn index_of(
    plan: &super::plan::Plan,
    cuts: &[std::ops::Range<usize>],
    names: &[String],
    total: u64,
) -> Option<String> {
    if names.len() < 2 {
        return None;
    }
    let mut weight_map = std::collections::BTreeMap::new();
    for (k, r) in cuts.iter().enumerate() {
        for t in &plan.tensors[r.clone()] {
            weight_map.insert(t.name.as_str(), names[k].as_str());
        }
    }
    Some(index_json(total, &weight_map))
}

/// A local DST must not exist, or be an empty directory.
pub(crate) fn refuse_non_empty(dst: &Path) -> Result<(), MoeError> {
    if dst.exists() {
        let empty = dst.is_dir() && std::fs::read_dir(dst).map(|mut d| d.next().is_none()).unwrap_or(false);
        if !empty {
            return Err(MoeError::DstNotEmpty { dst: dst.to_path_buf() });
        }
    }
    Ok(())
}

/// The temporary directory next to DST that becomes DST at the end.
pub(crate) fn temporary_dir(dst: &Path, dst_abs: &Path) -> Result<tempfile::TempDir, String> {
    let parent = dst_abs.parent().ok_or_else(|| format!("{}: no parent directory", dst.display()))?;
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    tempfile::Builder::new()
        .prefix(".patchgen-moe-")
        .tempdir_in(parent)
        .map_err(|e| format!("{}: cannot create a temporary directory: {e}", parent.display()))
}

/// Move the finished temporary directory into place as DST, durably: its
/// entries are synced before the rename and the rename after it.
pub(crate) fn commit(tmp: tempfile::TempDir, dst: &Path, dst_abs: &Path) -> Result<(), String> {
    sync_dir(tmp.path()).map_err(|e| format!("{}: {e}", tmp.path().display()))?;
    if dst.exists() {
        std::fs::remove_dir(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    }
    let kept = tmp.keep();
    std::fs::rename(&kept, dst_abs).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        format!("{}: cannot move the result into place: {e}", dst.display())
    })?;
    let parent = match dst_abs.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    sync_dir(parent).map_err(|e| format!("{}: {e}", parent.display()))
}

/// `fsync` a directory: its entries (created, renamed) are on disk.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Weights and indexes are never copied as "other files".
pub(crate) fn is_weight_file(name: &str) -> bool {
    [".safetensors", ".bin", ".pt", ".pth"].iter().any(|x| name.ends_with(x))
        || name == INDEX
        || name == "pytorch_model.bin.index.json"
}

/// The safetensors header of `tensors`, with `__metadata__` first and the
/// JSON padded with spaces to a multiple of 8 bytes.
pub fn header_bytes(tensors: &[OutTensor]) -> Vec<u8> {
    let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut at = 0u64;
    for t in tensors {
        let len = t.len();
        let shape: Vec<String> = t.shape.iter().map(u64::to_string).collect();
        json.push_str(&format!(
            ",{}:{{\"dtype\":{},\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            crate::json::string(&t.name),
            crate::json::string(&t.dtype),
            shape.join(","),
            at + len
        ));
        at += len;
    }
    json.push('}');
    while json.len() % 8 != 0 {
        json.push(' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out
}

/// Bytes written between two writeback starts (8 MiB did better than 32
/// in an interleaved run, docs/performance.md).
const WRITEBACK_CHUNK: u64 = 8 << 20;

/// Where an output file is written front to back: its written bytes are
/// sent to the disk as they come (every [`WRITEBACK_CHUNK`]), by another
/// thread, so that the disk writes while the next bytes are copied and the
/// final `fsync` waits for the last chunk only.
struct Output<'a> {
    file: &'a File,
    /// Bytes written.
    at: u64,
    /// Bytes sent to the flusher.
    started: u64,
    flusher: std::sync::mpsc::Sender<(u64, u64)>,
}

impl Output<'_> {
    /// `n` more bytes were written.
    fn advance(&mut self, n: u64) {
        self.at += n;
        if self.at - self.started >= WRITEBACK_CHUNK {
            // The flusher lives as long as the sender (scoped thread).
            let _ = self.flusher.send((self.started, self.at - self.started));
            self.started = self.at;
        }
    }
}

/// Start writing back `len` bytes of `file` at `offset`, not waiting.
/// `POSIX_FADV_DONTNEED` does that on Linux (what `sync_file_range(2)`'s
/// `SYNC_FILE_RANGE_WRITE` does, without `unsafe`): it submits the dirty
/// pages of the range and drops only clean ones. Advice: a failure changes
/// nothing, the final `fsync` is what makes the file durable.
fn start_writeback(file: &File, offset: u64, len: u64) {
    let _ = rustix::fs::fadvise(file, offset, std::num::NonZeroU64::new(len), rustix::fs::Advice::DontNeed);
}

fn write_shard(path: &Path, tensors: &[OutTensor], inputs: &[PathBuf], bar: &dyn Progress) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = File::create(path).map_err(io)?;
    // Submitting a range for writeback takes a few ms of kernel time per
    // chunk: a second thread does it while this one copies.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<(u64, u64)>();
        let file = &file;
        s.spawn(move || {
            for (offset, len) in rx {
                start_writeback(file, offset, len);
            }
        });
        let mut output = Output { file, at: 0, started: 0, flusher: tx };
        copy_tensors(&mut output, tensors, inputs, bar, path)
        // `output`, and with it the sender, is dropped here: the flusher ends.
    })?;
    file.sync_all().map_err(io)?;
    Ok(())
}

fn copy_tensors(
    output: &mut Output<'_>,
    tensors: &[OutTensor],
    inputs: &[PathBuf],
    bar: &dyn Progress,
    path: &Path,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut out = output.file;
    let header = header_bytes(tensors);
    out.write_all(&header).map_err(io)?;
    output.advance(header.len() as u64);
    let mut files: Vec<Option<File>> = (0..inputs.len()).map(|_| None).collect();
    let mut matrix = Vec::new();
    let mut transposed = Vec::new();
    for t in tensors {
        for piece in &t.pieces {
            super::cancel::interrupted()?;
            match *piece {
                Piece::Range { shard, offset, len } => {
                    let f = open(&mut files, inputs, shard)?;
                    let mut f: &File = f;
                    f.seek(SeekFrom::Start(offset)).map_err(|e| format!("{}: {e}", inputs[shard].display()))?;
                    let copied = std::io::copy(&mut f.take(len), &mut out).map_err(io)?;
                    if copied != len {
                        return Err(format!("{}: ended early while copying {}", inputs[shard].display(), t.name));
                    }
                    output.advance(len);
                }
                Piece::Matrix { shard, offset, rows, cols, elem, col_start, col_count } => {
                    let f = open(&mut files, inputs, shard)?;
                    read_matrix(f, offset, rows * cols * elem, &mut matrix)
                        .map_err(|e| format!("{}: {e}", inputs[shard].display()))?;
                    transpose(&matrix, rows, cols, elem, col_start, col_count, &mut transposed);
                    out.write_all(&transposed).map_err(io)?;
                    output.advance(transposed.len() as u64);
                }
            }
            bar.advance(piece.len());
        }
    }
    Ok(())
}

fn open<'a>(files: &'a mut [Option<File>], inputs: &[PathBuf], shard: usize) -> Result<&'a File, String> {
    if files[shard].is_none() {
        files[shard] = Some(File::open(&inputs[shard]).map_err(|e| format!("{}: {e}", inputs[shard].display()))?);
    }
    Ok(files[shard].as_ref().unwrap())
}

fn read_matrix(f: &File, offset: u64, len: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize(len as usize, 0);
    f.read_exact_at(buf, offset)
}

/// The transpose of columns `c0 .. c0 + n` of a `rows × cols` matrix of
/// `elem`-byte elements: an `n × rows` matrix.
pub fn transpose(m: &[u8], rows: u64, cols: u64, elem: u64, c0: u64, n: u64, out: &mut Vec<u8>) {
    let (rows, cols, elem, c0, n) = (rows as usize, cols as usize, elem as usize, c0 as usize, n as usize);
    out.clear();
    out.resize(n * rows * elem, 0);
    // Blocked for cache locality.
    const B: usize = 32;
    for cb in (0..n).step_by(B) {
        for rb in (0..rows).step_by(B) {
            for c in cb..(cb + B).min(n) {
                for r in rb..(rb + B).min(rows) {
                    let s = (r * cols + c0 + c) * elem;
                    let d = (c * rows + r) * elem;
                    out[d..d + elem].copy_from_slice(&m[s..s + elem]);
                }
            }
        }
    }
}

/// `json.dumps(index, indent=2, sort_keys=True) + "\n"`.
fn index_json(total: u64, weight_map: &std::collections::BTreeMap<&str, &str>) -> String {
    let mut s = format!("{{\n  \"metadata\": {{\n    \"total_size\": {total}\n  }},\n  \"weight_map\": {{");
    let mut first = true;
    for (k, v) in weight_map {
        s.push_str(if first { "\n    " } else { ",\n    " });
        first = false;
        s.push_str(&ascii(&crate::json::string(k)));
        s.push_str(": ");
        s.push_str(&ascii(&crate::json::string(v)));
    }
    s.push_str(if first { "}\n}\n" } else { "\n  }\n}\n" });
    s
}

/// Python's `ensure_ascii`: every non-ASCII character as `\uXXXX`
/// (surrogate pairs above the BMP).
fn ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

fn copy_other_files(src: &Path, dst: &Path) -> Result<(Vec<String>, Vec<String>), String> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut entries: Vec<_> =
        std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            dirs.push(name);
            continue;
        }
        if is_weight_file(&name) {
            continue;
        }
        std::fs::copy(&path, dst.join(&name)).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(name);
    }
    Ok((files, dirs))
}

/// Check one written shard: its header with the `safetensors` crate, then
/// every tensor's name, dtype, shape and bytes against the plan's sources.
fn verify_shard(path: &Path, name: &str, tensors: &[OutTensor], inputs: &[PathBuf]) -> Result<(), String> {
    let io = |e: std::io::Error| format!("verify: {}: {e}", path.display());
    let mut file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(io)?;
    let n = u64::from_le_bytes(len);
    let mut json = vec![0u8; n.min(file_len) as usize];
    file.read_exact(&mut json).map_err(io)?;
    let meta = check_written_header(name, n, file_len, &json, tensors)?;
    let data_start = 8 + n;
    let mut at = data_start;
    let mut files: Vec<Option<File>> = (0..inputs.len()).map(|_| None).collect();
    let (mut want, mut got, mut matrix) = (Vec::new(), Vec::new(), Vec::new());
    const CHUNK: u64 = 8 << 20;
    for t in tensors {
        check_written_entry(&meta, name, t, at - data_start)?;
        for piece in &t.pieces {
            match *piece {
                Piece::Range { shard, offset, len } => {
                    let f = open(&mut files, inputs, shard)?;
                    let mut done = 0;
                    while done < len {
                        let k = CHUNK.min(len - done);
                        want.resize(k as usize, 0);
                        got.resize(k as usize, 0);
                        f.read_exact_at(&mut want, offset + done).map_err(|e| format!("verify: {e}"))?;
                        file.read_exact_at(&mut got, at + done).map_err(io)?;
                        if want != got {
                            return Err(mismatch(name, &t.name, at + done - data_start, &want, &got));
                        }
                        done += k;
                    }
                }
                Piece::Matrix { shard, offset, rows, cols, elem, col_start, col_count } => {
                    let f = open(&mut files, inputs, shard)?;
                    read_matrix(f, offset, rows * cols * elem, &mut matrix).map_err(|e| format!("verify: {e}"))?;
                    transpose(&matrix, rows, cols, elem, col_start, col_count, &mut want);
                    got.resize(want.len(), 0);
                    file.read_exact_at(&mut got, at).map_err(io)?;
                    if want != got {
                        return Err(mismatch(name, &t.name, at - data_start, &want, &got));
                    }
                }
            }
            at += piece.len();
        }
    }
    Ok(())
}

/// Where a written shard's data starts: after its 8-byte header length
/// and the `n` bytes of header that length claims, inside its `file_len`
/// bytes (`n` is read from the file: checked, never wrapped).
pub(crate) fn data_start(name: &str, n: u64, file_len: u64) -> Result<u64, String> {
    n.checked_add(8)
        .filter(|&end| end <= file_len)
        .ok_or_else(|| format!("verify: {name}: a header of {n} bytes in a file of {file_len}"))
}

/// A written shard's header (its `n` JSON bytes, of a file of `file_len`)
/// through the `safetensors` crate's own parser and validation (dtypes,
/// shapes, offsets that tile the data, sizes), then the end of the data
/// against the file and the tensor count against the plan.
pub(crate) fn check_written_header(
    name: &str,
    n: u64,
    file_len: u64,
    json: &[u8],
    tensors: &[OutTensor],
) -> Result<safetensors::tensor::Metadata, String> {
    let meta: safetensors::tensor::Metadata = serde_json::from_slice(json)
        .map_err(|e| format!("verify: {name}: the safetensors crate rejects the header: {e}"))?;
    let infos = meta.tensors();
    let data_end = infos.values().map(|i| i.data_offsets.1 as u64).max().unwrap_or(0);
    let end = data_start(name, n, file_len)?.checked_add(data_end);
    if end != Some(file_len) {
        let end = end.map_or_else(|| format!("8 + {n} + {data_end} (past 2^64)"), |e| e.to_string());
        return Err(format!("verify: {name}: the data ends at {end} but the file has {file_len} bytes"));
    }
    if infos.len() != tensors.len() {
        return Err(format!("verify: {name}: {} tensors, expected {}", infos.len(), tensors.len()));
    }
    Ok(meta)
}

/// Tensor `t`'s entry in a written header: its dtype, shape and offset
/// (`at`, relative to the data section).
pub(crate) fn check_written_entry(
    meta: &safetensors::tensor::Metadata,
    name: &str,
    t: &OutTensor,
    at: u64,
) -> Result<(), String> {
    let info = meta.info(&t.name).ok_or_else(|| format!("verify: {name}: no tensor {}", t.name))?;
    let shape: Vec<u64> = info.shape.iter().map(|&d| d as u64).collect();
    if shape != t.shape || format!("{:?}", info.dtype) != t.dtype || info.data_offsets.0 as u64 != at {
        return Err(format!(
            "verify: {name}: {}: {:?} {:?} at {:?}, expected {} {:?} at {at}",
            t.name, info.dtype, shape, info.data_offsets, t.dtype, t.shape
        ));
    }
    Ok(())
}

pub(crate) fn mismatch(shard: &str, tensor: &str, base: u64, want: &[u8], got: &[u8]) -> String {
    let i = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(0);
    format!(
        "verify: {shard}: {tensor}: first mismatch at data byte {} (expected {:#04x}, found {:#04x})",
        base + i as u64,
        want[i],
        got[i]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_a_column_range() {
        // 2 × 3 matrix of 2-byte elements: [[a b c], [d e f]].
        let m: Vec<u8> = [1u8, 2, 3, 4, 5, 6].iter().flat_map(|&x| [x, 0x10 + x]).collect();
        let mut out = Vec::new();
        transpose(&m, 2, 3, 2, 0, 3, &mut out);
        let els: Vec<u8> = out.chunks(2).map(|c| c[0]).collect();
        assert_eq!(els, [1, 4, 2, 5, 3, 6]);
        transpose(&m, 2, 3, 2, 1, 2, &mut out);
        let els: Vec<u8> = out.chunks(2).map(|c| c[0]).collect();
        assert_eq!(els, [2, 5, 3, 6]);
        assert!(out.chunks(2).all(|c| c[1] == c[0] + 0x10));
    }

    #[test]
    fn verify_reports_the_first_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.bin");
        std::fs::write(&input, [9u8, 9, 0, 1, 2, 3, 4, 5]).unwrap();
        let tensors = vec![OutTensor {
            name: "w".into(),
            dtype: "U8".into(),
            shape: vec![2, 2],
            pieces: vec![Piece::Range { shard: 0, offset: 2, len: 4 }],
        }];
        let out = dir.path().join("model.safetensors");
        write_shard(&out, &tensors, std::slice::from_ref(&input), &patchgen_core::progress::Silent).unwrap();
        verify_shard(&out, "model.safetensors", &tensors, std::slice::from_ref(&input)).unwrap();
        let h = crate::header::read_header(&out).unwrap();
        assert_eq!(h.metadata, vec![("format".to_string(), "pt".to_string())]);
        assert_eq!(h.header_len % 8, 0);
        let mut bytes = std::fs::read(&out).unwrap();
        let last = bytes.len() - 2;
        bytes[last] = 0xff;
        std::fs::write(&out, bytes).unwrap();
        let e = verify_shard(&out, "model.safetensors", &tensors, std::slice::from_ref(&input)).unwrap_err();
        assert_eq!(e, "verify: model.safetensors: w: first mismatch at data byte 2 (expected 0x02, found 0xff)");
    }

    #[test]
    fn header_lengths_read_back_are_checked_not_wrapped() {
        assert_eq!(data_start("s", 16, 100), Ok(24));
        assert_eq!(data_start("s", 92, 100), Ok(100));
        assert_eq!(data_start("s", 93, 100), Err("verify: s: a header of 93 bytes in a file of 100".into()));
        assert_eq!(
            data_start("s", u64::MAX - 3, 100),
            Err(format!("verify: s: a header of {} bytes in a file of 100", u64::MAX - 3))
        );
        // A header length and data whose end would pass 2^64 (the
        // safetensors crate bounds the data alone).
        let big = 1u64 << 60;
        let json = format!(r#"{{"w":{{"dtype":"U8","shape":[{big}],"data_offsets":[0,{big}]}}}}"#);
        let n = u64::MAX - 20;
        let e = check_written_header("s", n, u64::MAX, json.as_bytes(), &[]).unwrap_err();
        assert_eq!(
            e,
            format!("verify: s: the data ends at 8 + {n} + {big} (past 2^64) but the file has {} bytes", u64::MAX)
        );
    }

    /// Tens of MiB through `write_shard`: ranges out of order, across two
    /// inputs, unaligned, so that the flusher sends several chunks.
    #[test]
    fn a_shard_of_several_writeback_chunks_has_its_pieces_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let inputs: Vec<PathBuf> = (0..2).map(|k| dir.path().join(format!("in{k}"))).collect();
        let mut data = Vec::new();
        for (k, p) in inputs.iter().enumerate() {
            let bytes: Vec<u8> = (0..(12u64 << 20) + 13).map(|i| (i * 31 + k as u64 * 7 + i / 4093) as u8).collect();
            std::fs::write(p, &bytes).unwrap();
            data.push(bytes);
        }
        let mut pieces = Vec::new();
        let mut expected = Vec::new();
        let mut at = 5u64;
        for step in 0..40u64 {
            let shard = (step % 2) as usize;
            let len = 1_000_003 + step * 17;
            let offset = (at * 7919 + step * 104_729) % ((12 << 20) - len);
            pieces.push(Piece::Range { shard, offset, len });
            expected.extend_from_slice(&data[shard][offset as usize..(offset + len) as usize]);
            at += len;
        }
        let total = expected.len() as u64;
        assert!(total > 3 * WRITEBACK_CHUNK);
        let tensors = vec![OutTensor { name: "w".into(), dtype: "U8".into(), shape: vec![total], pieces }];
        let out = dir.path().join("model.safetensors");
        write_shard(&out, &tensors, &inputs, &patchgen_core::progress::Silent).unwrap();
        let written = std::fs::read(&out).unwrap();
        let header = header_bytes(&tensors);
        assert_eq!(&written[..header.len()], &header[..]);
        assert!(written[header.len()..] == expected[..], "the data differs");
        verify_shard(&out, "model.safetensors", &tensors, &inputs).unwrap();
    }

    #[test]
    fn sizes_and_the_index_as_python_writes_them() {
        assert_eq!(parse_size("5GB").unwrap(), 5_000_000_000);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert!(parse_size("5 parsecs").is_err());
        let mut m = std::collections::BTreeMap::new();
        m.insert("b", "f2");
        m.insert("é", "f1");
        // json.dumps({"metadata": {"total_size": 3}, "weight_map": {"b": "f2", "é": "f1"}}, indent=2, sort_keys=True)
        assert_eq!(
            index_json(3, &m),
            "{\n  \"metadata\": {\n    \"total_size\": 3\n  },\n  \"weight_map\": {\n    \"b\": \"f2\",\n    \"\\u00e9\": \"f1\"\n  }\n}\n"
        );
    }
}
