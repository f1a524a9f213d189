//! Inputs and their digests: what a cached result was computed from, and
//! how to tell, on a later run, whether it is still the same.
//!
//! An [`Input`] is a [`Probe`] (what to look at) and the [`Digest`] it had
//! when the result was computed. A probe is one of:
//! - `Content`: a file's bytes, or the fact that no regular file is there
//!   (a missing file, a directory); for every file whose text decides the
//!   output (configs, project modules, upstream modules, ruff settings);
//! - `Exists`: only whether a regular file is there (a module looked up
//!   but never read, an `__init__.py` ruff's package detection looks for);
//! - `IsDir`: only whether a directory is there (a package ruff's isort
//!   looks for in its `src` roots);
//! - `Identity`: the file's identity: device, inode, size, modification
//!   and status-change times, type (for the ruff binary, wheels, directories
//!   whose listing matters). Any rewrite or replacement changes the inode,
//!   size, mtime or ctime; ctime cannot be set back by tools that restore
//!   an mtime (`touch -d`, `cp -p`, `tar`), so "same identity" is "same
//!   file" without reading it;
//! - `Value`: a value the caller computes for the whole run (settings,
//!   versions, the search path), looked up by name.
//!
//! Digests are BLAKE3 (`blake3` crate, the reference implementation by
//! its authors): collision resistance means an equal digest is an equal
//! input, not a likely one, and it hashes at several GB/s, so hashing
//! every input of a warm check costs less than reading it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::files::FileDigests;

/// A BLAKE3 digest, serialised as hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from_digit((b >> 4) as u32, 16).expect("nibble"));
            s.push(char::from_digit((b & 15) as u32, 16).expect("nibble"));
        }
        s
    }

    pub fn from_hex(s: &str) -> Option<Digest> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Digest(out))
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", &self.hex()[..16])
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Digest::from_hex(&s).ok_or_else(|| serde::de::Error::custom("not a 64-digit hex digest"))
    }
}

/// Digest of some labelled parts: each part is length-prefixed, so no two
/// different part lists give the same byte stream.
pub fn digest_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Digest {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    Digest(*h.finalize().as_bytes())
}

/// The hash domain of file contents (BLAKE3's key derivation mode keeps it
/// apart from every [`digest_parts`] digest).
const CONTENT_DOMAIN: &str = "patchgen cache 2026 file content";

/// Digest of a file's bytes, as a `Content` probe records it.
pub fn content_digest(bytes: &[u8]) -> Digest {
    let mut h = blake3::Hasher::new_derive_key(CONTENT_DOMAIN);
    h.update(bytes);
    Digest(*h.finalize().as_bytes())
}

/// [`content_digest`] of the file at `path`, read in small chunks (no
/// buffer the size of the file).
pub fn file_digest(path: &Path) -> std::io::Result<Digest> {
    let mut h = blake3::Hasher::new_derive_key(CONTENT_DOMAIN);
    // A FIFO or a device (recorded as an input, or put in its place) would
    // block or never end: only regular files are hashed.
    if !std::fs::metadata(path)?.is_file() {
        return Err(crate::bounded::not_regular());
    }
    h.update_reader(std::fs::File::open(path)?)?;
    Ok(Digest(*h.finalize().as_bytes()))
}

/// Digest of a string value, as a `Value` probe records it.
pub fn value_digest(value: &str) -> Digest {
    digest_parts([b"value".as_slice(), value.as_bytes()])
}

fn absent() -> Digest {
    digest_parts([b"absent".as_slice()])
}

fn exists(yes: bool) -> Digest {
    digest_parts([if yes { b"file".as_slice() } else { b"no file".as_slice() }])
}

fn is_dir(yes: bool) -> Digest {
    digest_parts([if yes { b"dir".as_slice() } else { b"no dir".as_slice() }])
}

/// What to look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "lowercase")]
pub enum Probe {
    Content {
        path: PathBuf,
    },
    Exists {
        path: PathBuf,
    },
    #[serde(rename = "isdir")]
    IsDir {
        path: PathBuf,
    },
    Identity {
        path: PathBuf,
    },
    Value {
        name: String,
    },
}

impl Probe {
    /// The file the probe looks at (`None` for a value).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Probe::Content { path } | Probe::Exists { path } | Probe::IsDir { path } | Probe::Identity { path } => {
                Some(path)
            }
            Probe::Value { .. } => None,
        }
    }
}

/// One input of a cached result: what it is (for messages), how to look
/// at it, and its digest then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// What the input is, for `-v` ("config module", "ruff settings", …).
    pub what: String,
    #[serde(flatten)]
    pub probe: Probe,
    pub digest: Digest,
}

impl Input {
    pub fn new(what: impl Into<String>, probe: Probe, digest: Digest) -> Input {
        Input { what: what.into(), probe, digest }
    }

    /// A file's bytes as they were read (the bytes the result came from).
    pub fn content(what: impl Into<String>, path: &Path, bytes: &[u8]) -> Input {
        Input::new(what, Probe::Content { path: path.to_path_buf() }, content_digest(bytes))
    }

    /// Whether a regular file was at `path`.
    pub fn exists(what: impl Into<String>, path: &Path, is_file: bool) -> Input {
        Input::new(what, Probe::Exists { path: path.to_path_buf() }, exists(is_file))
    }

    /// A value of the run.
    pub fn value(name: impl Into<String>, value: &str) -> Input {
        let name = name.into();
        Input::new(name.clone(), Probe::Value { name }, value_digest(value))
    }
}

/// How one input differs now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Changed,
    Appeared,
    Disappeared,
    /// It could not be looked at (a read error): never trusted.
    Unreadable,
}

/// Looks at probes now, each at most once per run (inputs are shared
/// between configs: the ruff binary, settings files, the transformers
/// version).
pub struct Prober {
    values: HashMap<String, Digest>,
    seen: Mutex<rustc_hash::FxHashMap<Probe, Option<Digest>>>,
    /// Content digests remembered across runs (`None`: hash every file).
    files: Option<Arc<FileDigests>>,
    /// Input groups validated this run, by digest (`None`: unchanged).
    pub(super) groups: Mutex<rustc_hash::FxHashMap<Digest, Option<super::Miss>>>,
}

impl Prober {
    /// `values`: the current value of every `Value` probe, by name.
    pub fn new(values: HashMap<String, Digest>) -> Prober {
        Prober { values, seen: Default::default(), files: None, groups: Default::default() }
    }

    /// A prober that takes file contents from `files` (see
    /// [`FileDigests`]): a file whose identity is unchanged since it was
    /// hashed is not hashed again.
    pub fn with_files(values: HashMap<String, Digest>, files: Arc<FileDigests>) -> Prober {
        Prober { files: Some(files), ..Prober::new(values) }
    }

    /// The content digest of the file at `path` (remembered, when this
    /// prober has a table).
    pub fn file_digest(&self, path: &Path) -> std::io::Result<Digest> {
        match &self.files {
            Some(files) => files.digest(path),
            None => file_digest(path),
        }
    }

    /// The digest `probe` has now; `None` when it cannot be looked at.
    pub fn digest(&self, probe: &Probe) -> Option<Digest> {
        if let Some(d) = self.seen.lock().expect("prober").get(probe) {
            return *d;
        }
        let d = self.look(probe);
        self.seen.lock().expect("prober").insert(probe.clone(), d);
        d
    }

    fn look(&self, probe: &Probe) -> Option<Digest> {
        match probe {
            Probe::Content { path } => match self.file_digest(path) {
                Ok(d) => Some(d),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(absent()),
                Err(_) if !path.is_file() => Some(absent()),
                Err(_) => None,
            },
            Probe::Exists { path } => Some(exists(path.is_file())),
            Probe::IsDir { path } => Some(is_dir(path.is_dir())),
            Probe::Identity { path } => Some(identity(path)),
            Probe::Value { name } => self.values.get(name).copied(),
        }
    }

    /// An input as it is now (for recording a probe the caller did not
    /// read itself).
    pub fn input(&self, what: impl Into<String>, probe: Probe) -> Option<Input> {
        let digest = self.digest(&probe)?;
        Some(Input { what: what.into(), probe, digest })
    }

    /// The first of `inputs` that differs now, and how.
    pub fn first_change<'a>(&self, inputs: &'a [Input]) -> Option<(&'a Input, Change)> {
        inputs.iter().find_map(|input| {
            let now = self.digest(&input.probe);
            match now {
                Some(d) if d == input.digest => None,
                None if matches!(input.probe, Probe::Value { .. }) => Some((input, Change::Changed)),
                None => Some((input, Change::Unreadable)),
                Some(d) => {
                    let gone = [absent(), exists(false), is_dir(false)];
                    let change = if gone.contains(&input.digest) {
                        Change::Appeared
                    } else if gone.contains(&d) {
                        Change::Disappeared
                    } else {
                        Change::Changed
                    };
                    Some((input, change))
                }
            }
        })
    }
}

/// How close to now a file's status-change time must be for its identity
/// not to be trusted. File times come from a coarse clock (one tick: 1 to
/// 10 ms on Linux), so two same-size rewrites within one tick can leave the
/// same identity; an entry recorded while an identity input is that fresh
/// is not stored (as git treats "racily clean" index entries). A file
/// system whose times have whole seconds only (FAT, ext3, HFS+; seen as a
/// time with zero nanoseconds) gets [`RACY_COARSE`].
pub const RACY: std::time::Duration = std::time::Duration::from_millis(50);

/// [`RACY`] on a file system with whole-second (FAT: two-second) times.
pub const RACY_COARSE: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether `input` is an identity that changed too recently to be trusted
/// (see [`RACY`]).
pub fn is_racy(input: &Input) -> bool {
    let Probe::Identity { path } = &input.probe else { return false };
    let Ok(meta) = std::fs::metadata(path) else { return false };
    let (changed, window) = {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let coarse = meta.ctime_nsec() == 0 && meta.mtime_nsec() == 0;
            let t = std::time::UNIX_EPOCH
                + std::time::Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec().max(0) as u32);
            (t, if coarse { RACY_COARSE } else { RACY })
        }
        #[cfg(not(unix))]
        {
            (meta.modified().unwrap_or(std::time::UNIX_EPOCH), RACY_COARSE)
        }
    };
    match std::time::SystemTime::now().duration_since(changed) {
        Ok(age) => age < window,
        Err(_) => true,
    }
}

/// Device, inode, size, modification and status-change times (s, ns),
/// mode: what changes whenever a file's content or listing may have.
#[cfg(unix)]
pub fn identity_fields(meta: &std::fs::Metadata) -> [u64; 8] {
    use std::os::unix::fs::MetadataExt;
    [
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
        meta.mode() as u64,
    ]
}

/// The digest of a file's identity (see the module doc), or of its absence.
pub fn identity(path: &Path) -> Digest {
    let Ok(meta) = std::fs::metadata(path) else { return absent() };
    #[cfg(unix)]
    {
        let fields = identity_fields(&meta);
        let bytes: Vec<u8> = fields.iter().flat_map(|f| f.to_le_bytes()).collect();
        digest_parts([b"identity".as_slice(), &bytes])
    }
    #[cfg(not(unix))]
    {
        let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let text = format!("{} {:?} {}", meta.len(), modified, meta.is_dir());
        digest_parts([b"identity".as_slice(), text.as_bytes()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let d = content_digest(b"abc");
        assert_eq!(Digest::from_hex(&d.hex()), Some(d));
        assert_eq!(Digest::from_hex("zz"), None);
        assert_eq!(Digest::from_hex(&"g".repeat(64)), None);
    }

    #[test]
    fn part_boundaries_matter() {
        assert_ne!(digest_parts([b"ab".as_slice(), b"c"]), digest_parts([b"a".as_slice(), b"bc"]));
    }

    #[test]
    fn probes_name_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        let missing = dir.path().join("b.py");
        std::fs::write(&f, "x = 1\n").unwrap();
        // An old mtime, so that rewriting the same bytes later changes it
        // whatever the clock's granularity.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options().write(true).open(&f).unwrap().set_modified(old).unwrap();
        let p = Prober::new(HashMap::from([("setting".to_string(), value_digest("1"))]));
        let inputs = vec![
            Input::content("config", &f, b"x = 1\n"),
            p.input("absent settings", Probe::Content { path: missing.clone() }).unwrap(),
            p.input("is there", Probe::Exists { path: f.clone() }).unwrap(),
            p.input("binary", Probe::Identity { path: f.clone() }).unwrap(),
            Input::value("setting", "1"),
        ];
        assert_eq!(p.first_change(&inputs), None);

        std::fs::write(&missing, "").unwrap();
        let p2 = Prober::new(HashMap::from([("setting".to_string(), value_digest("1"))]));
        let (input, change) = p2.first_change(&inputs).unwrap();
        assert_eq!((input.what.as_str(), change), ("absent settings", Change::Appeared));

        std::fs::remove_file(&missing).unwrap();
        std::fs::write(&f, "x = 2\n").unwrap();
        let p3 = Prober::new(HashMap::from([("setting".to_string(), value_digest("1"))]));
        let (input, change) = p3.first_change(&inputs).unwrap();
        assert_eq!((input.what.as_str(), change), ("config", Change::Changed));

        let p4 = Prober::new(HashMap::new());
        std::fs::write(&f, "x = 1\n").unwrap();
        // Same bytes again: the content matches, the identity (mtime, ctime) does not.
        let (input, _) = p4.first_change(&inputs).unwrap();
        assert_eq!(input.what, "binary");
        let (input, change) = p4.first_change(&inputs[4..]).unwrap();
        assert_eq!((input.what.as_str(), change), ("setting", Change::Changed));

        std::fs::remove_file(&f).unwrap();
        let p5 = Prober::new(HashMap::new());
        let (input, change) = p5.first_change(&inputs).unwrap();
        assert_eq!((input.what.as_str(), change), ("config", Change::Disappeared));
    }
}
