//! `moe convert` with a remote end: remote → local, local → remote (a
//! bucket), remote → remote. The same plan and the same bytes as the local
//! conversion (`convert::prepare`, `header_bytes`, the index text); only the
//! way bytes move differs.
//!
//! Streaming, in bounded memory: each output shard is its header, then its
//! pieces as reads of at most [`CHUNK`] bytes (contiguous source ranges
//! merged first; a transposed matrix is read whole, as locally), at most
//! [`AHEAD_BYTES`] of them in flight, written in order to the sink: a local
//! file, or a multipart upload in parts of [`PART`] bytes with at most
//! [`UPLOADS`] parts in flight. Memory per `--jobs` thread stays under
//! ~100 MB whatever the checkpoint's size.
//!
//! Commit: a local DST is a temporary directory renamed at the end (as
//! locally); a bucket DST gets its shards and other files first and the
//! index last, so a reader (who looks for the index) never sees a
//! half-written checkpoint; a one-shard output's `model.safetensors` is the
//! last object written (a multipart upload appears only when complete). On
//! failure every object written is deleted and unfinished uploads are
//! aborted. `--verify` reads the output back through the same store.

use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use object_store::WriteMultipart;
use patchgen_core::progress::Progress;
use rayon::prelude::*;

use super::error::RemoteError;
use super::store::{Remote, block_on};
use super::url::Place;
use super::{Location, open};
use crate::checkpoint::{Checkpoint, INDEX};
use crate::config::MoeDims;
use crate::convert::{
    ConvertOptions, ConvertReport, Prepared, check_written_entry, check_written_header, commit, header_bytes, index_of,
    is_weight_file, mismatch, prepare, refuse_non_empty, temporary_dir, transpose,
};
use crate::plan::{OutTensor, Piece};

/// Largest single read of tensor data.
pub const CHUNK: u64 = 8 << 20;
/// Bytes of reads in flight per output shard.
pub const AHEAD_BYTES: u64 = 32 << 20;
/// Multipart part size (S3 wants ≥ 5 MiB).
pub const PART: usize = 8 << 20;
/// Parts uploading at once per output shard.
pub const UPLOADS: usize = 4;

/// Files copied from an `hf://` or `http(s)://` source, which cannot be
/// listed (those present; the rest are skipped silently).
pub const WELL_KNOWN: &[&str] = &[
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "preprocessor_config.json",
    "processor_config.json",
    "video_preprocessor_config.json",
];

/// Where input bytes come from: local files (opened per read: a 1,000-shard
/// checkpoint holds no 1,000 descriptors) or a remote directory.
#[derive(Clone)]
enum Reader {
    Local(Arc<Vec<PathBuf>>),
    Remote(Remote, Arc<Vec<String>>),
}

impl Reader {
    fn open(p: &Path) -> Result<std::fs::File, RemoteError> {
        std::fs::File::open(p).map_err(|e| RemoteError::Checkpoint(format!("{}: cannot open: {e}", p.display())))
    }

    async fn read(&self, shard: usize, range: Range<u64>) -> Result<Bytes, RemoteError> {
        match self {
            Reader::Local(paths) => {
                let p = &paths[shard];
                let mut buf = vec![0u8; (range.end - range.start) as usize];
                Self::open(p)?
                    .read_exact_at(&mut buf, range.start)
                    .map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display())))?;
                Ok(Bytes::from(buf))
            }
            Reader::Remote(r, names) => r.read_range(&names[shard], range).await,
        }
    }

    /// Like `read`, as chunks (a remote read keeps the connection's).
    async fn read_chunks(&self, shard: usize, range: Range<u64>) -> Result<Vec<Bytes>, RemoteError> {
        match self {
            Reader::Local(_) => Ok(vec![self.read(shard, range).await?]),
            Reader::Remote(r, names) => r.read_chunks(&names[shard], range).await,
        }
    }

    /// The first `max` bytes of shard `shard` and its size.
    async fn head(&self, shard: usize, max: u64) -> Result<(Bytes, u64), RemoteError> {
        match self {
            Reader::Local(paths) => {
                let p = &paths[shard];
                let size = Self::open(p)?
                    .metadata()
                    .map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display())))?
                    .len();
                Ok((self.read(shard, 0..max.min(size)).await?, size))
            }
            Reader::Remote(r, names) => r.read_head(&names[shard], max).await,
        }
    }
}

/// One read of the pipeline: `len` output bytes at `out_at` (relative to
/// the shard's data section).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Op {
    piece: Piece,
    out_at: u64,
}

/// The reads that produce `tensors`' data, in output order.
fn ops(tensors: &[OutTensor]) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::new();
    let mut at = 0;
    for t in tensors {
        for p in &t.pieces {
            if let (
                Piece::Range { shard, offset, len },
                Some(Op { piece: Piece::Range { shard: s, offset: o, len: l }, .. }),
            ) = (p, out.last_mut())
                && *s == *shard
                && *o + *l == *offset
            {
                *l += len;
            } else {
                out.push(Op { piece: p.clone(), out_at: at });
            }
            at += p.len();
        }
    }
    // Split long ranges.
    let mut split = Vec::with_capacity(out.len());
    for op in out {
        match op.piece {
            Piece::Range { shard, offset, len } if len > CHUNK => {
                let mut done = 0;
                while done < len {
                    let k = CHUNK.min(len - done);
                    split.push(Op {
                        piece: Piece::Range { shard, offset: offset + done, len: k },
                        out_at: op.out_at + done,
                    });
                    done += k;
                }
            }
            _ => split.push(op),
        }
    }
    split
}

/// How many reads may be in flight.
fn ahead(ops: &[Op]) -> usize {
    let largest = ops.iter().map(|o| o.piece.len()).max().unwrap_or(1).max(1);
    (AHEAD_BYTES / largest).clamp(1, 4) as usize
}

/// The output bytes of `op`, in chunks.
async fn fetch(src: &Reader, op: &Op) -> Result<Vec<Bytes>, RemoteError> {
    match op.piece {
        Piece::Range { shard, offset, len } => src.read_chunks(shard, offset..offset + len).await,
        Piece::Matrix { shard, offset, rows, cols, elem, col_start, col_count } => {
            let m = src.read(shard, offset..offset + rows * cols * elem).await?;
            let mut out = Vec::new();
            transpose(&m, rows, cols, elem, col_start, col_count, &mut out);
            Ok(vec![Bytes::from(out)])
        }
    }
}

/// Chunks as one contiguous buffer.
fn joined(chunks: Vec<Bytes>) -> Bytes {
    match <[Bytes; 1]>::try_from(chunks) {
        Ok([one]) => one,
        Err(chunks) => Bytes::from(chunks.concat()),
    }
}

/// Where one output shard goes.
enum Sink<'a> {
    File(std::fs::File, PathBuf),
    Upload(WriteMultipart, &'a Remote, String),
}

impl Sink<'_> {
    async fn write(&mut self, b: &[u8]) -> Result<(), RemoteError> {
        match self {
            Sink::File(f, p) => {
                use std::io::Write;
                f.write_all(b).map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display())))
            }
            Sink::Upload(w, r, name) => {
                w.wait_for_capacity(UPLOADS).await.map_err(|e| r.upload_fault(name, e))?;
                w.write(b);
                r.add_written(b.len() as u64);
                Ok(())
            }
        }
    }

    async fn finish(self) -> Result<(), RemoteError> {
        match self {
            Sink::File(f, p) => f.sync_all().map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display()))),
            Sink::Upload(w, r, name) => w.finish().await.map(|_| ()).map_err(|e| r.upload_fault(&name, e)),
        }
    }

    async fn abort(self) {
        if let Sink::Upload(w, _, _) = self {
            let _ = w.abort().await;
        }
    }
}

async fn write_shard(
    src: &Reader,
    tensors: &[OutTensor],
    mut sink: Sink<'_>,
    bar: &dyn Progress,
) -> Result<(), RemoteError> {
    let result = async {
        sink.write(&header_bytes(tensors)).await?;
        let ops = ops(tensors);
        // Each read is a task of its own: sockets keep draining while a
        // chunk is written; `buffered` still bounds how many are in flight.
        let spawn = |op: &Op| {
            let (src, op) = (src.clone(), op.clone());
            tokio::spawn(async move { fetch(&src, &op).await })
        };
        let mut stream = futures::stream::iter(ops.iter()).map(spawn).buffered(ahead(&ops));
        while let Some(chunks) = stream.next().await {
            crate::cancel::interrupted().map_err(RemoteError::Checkpoint)?;
            let chunks = chunks.map_err(|e| RemoteError::Checkpoint(format!("a read task failed: {e}")))?;
            for b in chunks? {
                sink.write(&b).await?;
                bar.advance(b.len() as u64);
            }
        }
        Ok::<(), RemoteError>(())
    }
    .await;
    match result {
        Ok(()) => sink.finish().await,
        Err(e) => {
            sink.abort().await;
            Err(e)
        }
    }
}

/// Re-read output shard 0 of `out` (named `name`) and compare it with the
/// plan's sources.
async fn verify_shard(out: &Reader, name: &str, tensors: &[OutTensor], src: &Reader) -> Result<(), RemoteError> {
    let fail = RemoteError::Checkpoint;
    let (head, size) = out.head(0, 8).await?;
    if head.len() < 8 {
        return Err(fail(format!("verify: {name}: {size} bytes, too short")));
    }
    let n = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
    let data = crate::convert::data_start(name, n, size).map_err(fail)?;
    let json = out.read(0, 8..data).await?;
    let meta = check_written_header(name, n, size, &json, tensors).map_err(fail)?;
    let mut at = 0;
    let mut starts = Vec::with_capacity(tensors.len());
    for t in tensors {
        check_written_entry(&meta, name, t, at).map_err(fail)?;
        starts.push(at);
        at += t.len();
    }
    let ops = ops(tensors);
    let mut stream =
        futures::stream::iter(ops.iter()).map(|op| both(src, out, data, op)).buffered(ahead(&ops).div_ceil(2));
    while let Some(r) = stream.next().await {
        let (base, want, got) = r?;
        if want != got {
            let i = want.iter().zip(got.iter()).position(|(a, b)| a != b).unwrap_or(0) as u64;
            let t = starts.partition_point(|&s| s <= base + i).saturating_sub(1);
            return Err(fail(mismatch(name, &tensors[t].name, base, &want, &got)));
        }
    }
    Ok(())
}

/// An op's source bytes and the output's bytes at its place.
async fn both(src: &Reader, out: &Reader, data: u64, op: &Op) -> Result<(u64, Bytes, Bytes), RemoteError> {
    let want = joined(fetch(src, op).await?);
    let got = out.read(0, data + op.out_at..data + op.out_at + want.len() as u64).await?;
    Ok((op.out_at, want, got))
}

/// The opened source: its checkpoint, config and reader.
struct Source {
    ck: Checkpoint,
    dims: Option<MoeDims>,
    reader: Reader,
    label: PathBuf,
}

fn open_source(src: &Location, arg: &Path) -> Result<Source, RemoteError> {
    match src {
        Location::Local(p) => {
            let ck = Checkpoint::open(p).map_err(RemoteError::from)?;
            let config = if p.is_dir() { Some(p.join("config.json")).filter(|c| c.is_file()) } else { None };
            let dims = config.as_deref().map(MoeDims::load).transpose().map_err(RemoteError::from)?;
            let reader = Reader::Local(Arc::new(ck.shards.iter().map(|s| s.path.clone()).collect()));
            Ok(Source { ck, dims, reader, label: arg.to_path_buf() })
        }
        Location::Remote(r) => {
            let (opened, dims) = block_on(async { futures::future::try_join(open::open(r), open::config(r)).await })??;
            Ok(Source {
                ck: opened.ck,
                dims,
                reader: Reader::Remote((**r).clone(), Arc::new(opened.names)),
                label: arg.to_path_buf(),
            })
        }
    }
}

/// Files `(name, bytes)` and the names of skipped subdirectories.
type OtherFiles = (Vec<(String, Bytes)>, Vec<String>);

/// The non-weight files of SRC: `(name, bytes)` and the subdirectories skipped.
fn other_files(src: &Location) -> Result<OtherFiles, RemoteError> {
    match src {
        Location::Local(p) if p.is_dir() => {
            let mut files = Vec::new();
            let mut dirs = Vec::new();
            let io = |e: std::io::Error| RemoteError::Checkpoint(format!("{}: {e}", p.display()));
            let mut entries: Vec<_> = std::fs::read_dir(p).map_err(io)?.filter_map(|e| e.ok()).collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    dirs.push(name);
                } else if !is_weight_file(&name) {
                    files.push((name, Bytes::from(std::fs::read(e.path()).map_err(io)?)));
                }
            }
            Ok((files, dirs))
        }
        Location::Local(_) => Ok((Vec::new(), Vec::new())),
        Location::Remote(r) if r.url.file.is_some() => Ok((Vec::new(), Vec::new())),
        Location::Remote(r) => block_on(async {
            let (names, dirs): (Vec<String>, Vec<String>) = if r.url.can_list() {
                let (files, dirs) = r.list().await?;
                (files.into_iter().map(|(n, _)| n).filter(|n| !is_weight_file(n)).collect(), dirs)
            } else {
                (WELL_KNOWN.iter().map(|s| s.to_string()).collect(), Vec::new())
            };
            let got: Vec<Result<Option<Bytes>, RemoteError>> =
                futures::stream::iter(names.iter()).map(|n| r.get_all(n)).buffered(8).collect().await;
            let mut files = Vec::new();
            for (n, g) in names.into_iter().zip(got) {
                if let Some(b) = g? {
                    files.push((n, b));
                }
            }
            files.sort_by(|a, b| a.0.cmp(&b.0));
            let mut dirs = dirs;
            dirs.sort();
            Ok((files, dirs))
        })?,
    }
}

/// The destination while it is written.
enum Dest<'a> {
    Local { tmp: tempfile::TempDir, dst: PathBuf, dst_abs: PathBuf },
    Remote { r: &'a Remote, written: Mutex<Vec<String>> },
}

impl Dest<'_> {
    fn sink(&self, name: &str) -> Result<Sink<'_>, RemoteError> {
        match self {
            Dest::Local { tmp, .. } => {
                let p = tmp.path().join(name);
                let f =
                    std::fs::File::create(&p).map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display())))?;
                Ok(Sink::File(f, p))
            }
            Dest::Remote { r, written } => {
                let w = block_on(r.writer(name, PART))??;
                if let Ok(mut v) = written.lock() {
                    v.push(name.to_string());
                }
                Ok(Sink::Upload(w, r, name.to_string()))
            }
        }
    }

    fn put(&self, name: &str, bytes: Bytes) -> Result<(), RemoteError> {
        match self {
            Dest::Local { tmp, .. } => {
                let p = tmp.path().join(name);
                std::fs::write(&p, &bytes).map_err(|e| RemoteError::Checkpoint(format!("{}: {e}", p.display())))
            }
            Dest::Remote { r, written } => {
                if let Ok(mut v) = written.lock() {
                    v.push(name.to_string());
                }
                block_on(r.put(name, bytes))?
            }
        }
    }

    fn reader(&self, name: &str) -> Result<Reader, RemoteError> {
        match self {
            Dest::Local { tmp, .. } => Ok(Reader::Local(Arc::new(vec![tmp.path().join(name)]))),
            Dest::Remote { r, .. } => Ok(Reader::Remote((*r).clone(), Arc::new(vec![name.to_string()]))),
        }
    }

    /// Undo: delete what was written (a local temporary directory goes when dropped).
    fn discard(self) {
        if let Dest::Remote { r, written } = self {
            let names = written.into_inner().unwrap_or_default();
            let _ = block_on(async {
                futures::stream::iter(names.iter())
                    .for_each_concurrent(8, |n| async move {
                        let _ = r.delete(n).await;
                    })
                    .await
            });
        }
    }
}

/// Refuse a DST that cannot be written or would overwrite something.
fn open_dest<'a>(src: &Location, dst: &'a Location, dst_arg: &Path) -> Result<Dest<'a>, RemoteError> {
    match dst {
        Location::Local(p) => {
            refuse_non_empty(p).map_err(|e| RemoteError::Request(e.to_string()))?;
            let dst_abs = patchgen_core::project::resolve(p);
            if let Location::Local(s) = src {
                let src_abs = patchgen_core::project::resolve(s);
                if dst_abs == src_abs || dst_abs.starts_with(&src_abs) && s.is_dir() {
                    return Err(RemoteError::Request(format!(
                        "{}: DST is SRC or inside it: refusing to write into the source",
                        dst_arg.display()
                    )));
                }
            }
            let tmp = temporary_dir(p, &dst_abs).map_err(RemoteError::Checkpoint)?;
            Ok(Dest::Local { tmp, dst: p.clone(), dst_abs })
        }
        Location::Remote(r) => {
            let url = r.url.to_string();
            if !matches!(r.url.place, Place::Bucket { .. }) || r.url.file.is_some() {
                return Err(RemoteError::Request(format!(
                    "{url}: a conversion writes to a local directory or a bucket (s3://, gs://, az://); the Hub and plain HTTP are read-only here\n  help: convert to a local directory, then upload it (`hf upload REPO DIR`)"
                )));
            }
            if let Location::Remote(s) = src
                && let (
                    Place::Bucket { kind: k1, bucket: b1, prefix: p1 },
                    Place::Bucket { kind: k2, bucket: b2, prefix: p2 },
                ) = (&s.url.place, &r.url.place)
                && k1 == k2
                && b1 == b2
                && (p1 == p2 || p1.is_empty() || p2.starts_with(&format!("{p1}/")))
            {
                return Err(RemoteError::Request(format!(
                    "{url}: DST is SRC or inside it: refusing to write into the source"
                )));
            }
            let (files, dirs) = block_on(r.list())??;
            if !files.is_empty() || !dirs.is_empty() {
                return Err(RemoteError::Request(format!(
                    "{url}: exists and is not empty ({} object(s)): refusing to overwrite",
                    files.len() + dirs.len()
                )));
            }
            Ok(Dest::Remote { r, written: Mutex::new(Vec::new()) })
        }
    }
}

/// `moe convert SRC DST` with at least one end remote.
pub fn convert(
    src: &Location,
    dst: &Location,
    src_arg: &Path,
    dst_arg: &Path,
    opts: &ConvertOptions,
) -> Result<ConvertReport, RemoteError> {
    let start = Instant::now();
    let dest = open_dest(src, dst, dst_arg)?;
    match write_all(src, &dest, src_arg, dst_arg, opts, start) {
        Ok(mut report) => {
            match dest {
                Dest::Local { tmp, dst, dst_abs } => commit(tmp, &dst, &dst_abs).map_err(RemoteError::Checkpoint)?,
                Dest::Remote { .. } => {}
            }
            let stats = |l: &Location| match l {
                Location::Remote(r) => Some(r.stats.clone()),
                Location::Local(_) => None,
            };
            let (s, d) = (stats(src), stats(dst));
            let read = |x: &Option<std::sync::Arc<super::store::Stats>>| {
                x.as_ref().map(|s| s.bytes_read.load(std::sync::atomic::Ordering::Relaxed))
            };
            report.bytes_read = match (read(&s), read(&d)) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
            report.bytes_written = d.map(|s| s.bytes_written.load(std::sync::atomic::Ordering::Relaxed));
            report.seconds = start.elapsed().as_secs_f64();
            Ok(report)
        }
        Err(e) => {
            dest.discard();
            Err(e)
        }
    }
}

fn write_all(
    src: &Location,
    dest: &Dest<'_>,
    src_arg: &Path,
    dst_arg: &Path,
    opts: &ConvertOptions,
    start: Instant,
) -> Result<ConvertReport, RemoteError> {
    let source = open_source(src, src_arg)?;
    let Prepared { plan, cuts, names, total } =
        prepare(&source.ck, source.dims.as_ref(), &source.label, opts).map_err(RemoteError::from)?;
    let n = names.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(1).max(1))
        .build()
        .map_err(|e| RemoteError::Checkpoint(format!("cannot start threads: {e}")))?;

    // Other files first: with a bucket DST the weights and the index come last.
    let (others, skipped_dirs) = other_files(src)?;
    let copied_files: Vec<String> = others.iter().map(|(n, _)| n.clone()).collect();
    for (name, bytes) in others {
        dest.put(&name, bytes)?;
    }

    let bar = &*opts.progress;
    bar.start(total);
    let write_one = |k: usize| -> Result<(), RemoteError> {
        let sink = dest.sink(&names[k])?;
        block_on(write_shard(&source.reader, &plan.tensors[cuts[k].clone()], sink, bar))?
    };
    pool.install(|| (0..n).into_par_iter().map(write_one).collect::<Result<Vec<()>, RemoteError>>())?;
    bar.finish();

    if opts.verify {
        pool.install(|| {
            (0..n)
                .into_par_iter()
                .map(|k| {
                    let out = dest.reader(&names[k])?;
                    block_on(verify_shard(&out, &names[k], &plan.tensors[cuts[k].clone()], &source.reader))?
                })
                .collect::<Result<Vec<()>, RemoteError>>()
        })?;
    }
    // The commit point of a bucket DST.
    if let Some(index) = index_of(&plan, &cuts, &names, total) {
        dest.put(INDEX, Bytes::from(index))?;
    }
    let prepared = Prepared { plan, cuts, names, total };
    Ok(ConvertReport::new(src_arg, dst_arg, opts, prepared, (copied_files, skipped_dirs), start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_merge_contiguous_ranges_and_split_long_ones() {
        let t = |pieces: Vec<Piece>| OutTensor { name: "t".into(), dtype: "U8".into(), shape: vec![], pieces };
        let tensors = vec![
            t(vec![Piece::Range { shard: 0, offset: 100, len: 10 }, Piece::Range { shard: 0, offset: 110, len: 5 }]),
            t(vec![
                Piece::Range { shard: 0, offset: 115, len: CHUNK + 1 },
                Piece::Range { shard: 1, offset: 0, len: 3 },
            ]),
        ];
        let o = ops(&tensors);
        let pieces: Vec<(Piece, u64)> = o.iter().map(|o| (o.piece.clone(), o.out_at)).collect();
        assert_eq!(
            pieces,
            vec![
                (Piece::Range { shard: 0, offset: 100, len: CHUNK }, 0),
                (Piece::Range { shard: 0, offset: 100 + CHUNK, len: 16 }, CHUNK),
                (Piece::Range { shard: 1, offset: 0, len: 3 }, CHUNK + 16),
            ]
        );
        assert_eq!(ahead(&o), 4);
    }
}
