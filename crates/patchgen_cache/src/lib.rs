//! The project's result cache (`.patchgen_cache/`): what a computation
//! produced, keyed by everything it read, so that a later run whose inputs
//! are all unchanged can skip it.
//!
//! Contract:
//! - An entry is found by a [`Key`] (a kind, such as `"check"` or
//!   `"lint"`, and the parts that name the computation: the config module,
//!   the config name, the output directory, …). It holds the [`Input`]s
//!   the computation read, each with its digest then, and a payload (for
//!   generation: the digest of the expected `.py` and `.diff`).
//! - [`Cache::lookup`] is a hit only when the entry is intact, written by
//!   this patchgen version in this format, names the same key, and every
//!   input has the same digest now. Anything else is a [`Miss`] saying why
//!   (for `-v`): no entry, unreadable or corrupt, foreign, or the first
//!   input that changed. A bad entry is never trusted and never an error.
//! - [`Cache::store`] writes an entry only if every input still has the
//!   digest recorded when it was used (so a file edited while the
//!   computation ran cannot pair its new digest with the old result) and
//!   no file identity is too fresh to trust ([`probe::RACY`]). It writes a
//!   temporary file in the cache and renames it over the entry: readers see
//!   the old entry or the new one, never a mix, and two processes storing
//!   the same entry at once leave one of the two whole. An entry's header
//!   records its body's length and BLAKE3 checksum: it is read only as a
//!   regular file whose size is what its header says (a FIFO, a file grown
//!   or truncated since, is not read), and a torn write (a crash, a full
//!   disk) is detected on read; no fsync is needed for correctness.
//! - The cache directory holds a `.gitignore` of `*` and a `CACHEDIR.TAG`.
//!   [`Cache::open`] refuses a non-empty directory that has no such tag
//!   and is not named `.patchgen_cache` (a mistyped `cache-dir` must not
//!   turn a source directory into a cache, nor git-ignore it); [`clean`]
//!   removes only what the cache itself writes.

//!
//! Using it from a command (as `pipeline::cached` does for `check` and
//! `generate`; `lint` could the same way, keyed `"lint"`, with the
//! diagnostics as payload and every file its rules read as inputs): build a
//! [`Key`]; [`Cache::lookup`] with a fresh [`Prober`] (its `Value` inputs
//! computed for the run); on a miss, compute while recording inputs
//! ([`Input::content`] for bytes you read, [`Prober::input`] for what
//! another program reads), then [`Cache::store`] with another fresh
//! prober.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod bounded;
pub mod files;

/// Largest entry or input group read: what a run stores is far smaller; a
/// larger file in their place is not the cache's and is not read.
const MAX_ENTRY: u64 = bounded::DEFAULT_MAX_FILE_SIZE;
pub mod probe;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use files::FileDigests;
pub use probe::{Change, Digest, Input, Probe, Prober};

/// The default cache directory, relative to the project root.
pub const DEFAULT_DIR: &str = ".patchgen_cache";

/// The on-disk entry format; entries of another format are misses.
pub const FORMAT: u32 = 3;

const ENTRIES: &str = "entries";
const GROUPS: &str = "groups";
const FILES: &str = "files";
const TAG_FILE: &str = "CACHEDIR.TAG";
/// <https://bford.info/cachedir/>: backup tools skip a directory holding this.
const TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by patchgen.\n# For information about cache directory tags see https://bford.info/cachedir/\n";
const GITIGNORE: &str = "# Automatically created by patchgen.\n*\n";
const MAGIC: &str = "patchgen-cache";

/// This build's version, written into every entry.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// What names a cached computation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub kind: String,
    pub parts: Vec<String>,
}

impl Key {
    pub fn new(kind: &str, parts: impl IntoIterator<Item = String>) -> Key {
        Key { kind: kind.to_string(), parts: parts.into_iter().collect() }
    }

    fn file_name(&self) -> String {
        let mut all: Vec<&[u8]> = vec![self.kind.as_bytes()];
        all.extend(self.parts.iter().map(|p| p.as_bytes()));
        let hex = probe::digest_parts(all).hex();
        format!("{}-{}.entry", self.kind, &hex[..32])
    }
}

/// Why a lookup was not a hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// No entry for this key yet.
    NoEntry,
    /// The entry cannot be used: truncated, corrupt, unreadable, or for
    /// another key (it will be rewritten).
    Corrupt(String),
    /// Written by another patchgen version or entry format.
    Foreign(String),
    /// An input differs from when the entry was written.
    Input { what: String, probe: Probe, change: Change },
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::NoEntry => write!(f, "no cache entry yet"),
            Miss::Corrupt(why) => write!(f, "cache entry unusable ({why})"),
            Miss::Foreign(who) => write!(f, "cache entry from {who}"),
            Miss::Input { what, probe, change } => {
                let subject = match probe.path() {
                    Some(path) => format!("{what} {}", path.display()),
                    None => what.clone(),
                };
                let how = match change {
                    Change::Changed => "changed",
                    Change::Appeared => "appeared",
                    Change::Disappeared => "disappeared",
                    Change::Unreadable => "cannot be read",
                };
                write!(f, "{subject} {how}")
            }
        }
    }
}

/// A lookup's outcome.
#[derive(Debug)]
pub enum Lookup<P> {
    Hit(P),
    Miss(Miss),
}

/// Why an entry was not stored (not an error: the next run computes it
/// again).
#[derive(Debug)]
pub enum NotStored {
    /// An input changed while the computation ran, or could not be read.
    Changed(Miss),
    /// A file identity is too fresh to be trusted (see [`probe::RACY`]).
    Racy(PathBuf),
    /// Some of the computation's inputs were not recorded (named).
    Unrecorded(&'static str),
    Io(std::io::Error),
}

impl std::fmt::Display for NotStored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStored::Changed(m) => write!(f, "not cached: {m} while it ran"),
            NotStored::Racy(p) => write!(f, "not cached: {} changed too recently to trust its identity", p.display()),
            NotStored::Unrecorded(what) => write!(f, "not cached: {what} not recorded"),
            NotStored::Io(e) => write!(f, "not cached: cannot write the cache: {e}"),
        }
    }
}

/// What a computation read: its own inputs, and groups of inputs that
/// other computations share (the run's settings, an upstream module, the
/// ruff settings of a directory). A group is stored once, named by its
/// digest, and looked at once per run however many entries name it.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub own: Vec<Input>,
    pub shared: Vec<Arc<Vec<Input>>>,
}

impl Inputs {
    /// Every input, own first.
    pub fn iter(&self) -> impl Iterator<Item = &Input> {
        self.own.iter().chain(self.shared.iter().flat_map(|g| g.iter()))
    }
}

#[derive(Serialize, Deserialize)]
struct Entry<P> {
    patchgen: String,
    key: Key,
    inputs: Vec<Input>,
    /// Digests of the shared input groups (files in `groups/`).
    groups: Vec<Digest>,
    payload: P,
}

/// An open cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    files: Arc<FileDigests>,
}

impl Cache {
    /// Open (creating if needed) the cache at `dir`. Refuses a directory
    /// that exists, is not empty and is not a patchgen cache.
    pub fn open(dir: &Path) -> std::io::Result<Cache> {
        let tag = dir.join(TAG_FILE);
        if !tagged(dir) {
            // A directory named as ours (another patchgen cache may have
            // made it) is adopted; any other non-empty one is refused.
            let ours = dir.file_name().is_some_and(|n| n == DEFAULT_DIR);
            if let Ok(mut listing) = std::fs::read_dir(dir)
                && listing.next().is_some()
                && !ours
            {
                return Err(std::io::Error::other(format!(
                    "{} exists and is not a patchgen cache (no {TAG_FILE}); not using it",
                    dir.display()
                )));
            }
            std::fs::create_dir_all(dir)?;
            write_atomic(&dir.join(".gitignore"), GITIGNORE.as_bytes())?;
            write_atomic(&tag, TAG.as_bytes())?;
        } else if !dir.join(".gitignore").is_file() {
            write_atomic(&dir.join(".gitignore"), GITIGNORE.as_bytes())?;
        }
        for sub in [ENTRIES, GROUPS] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        Ok(Cache { dir: dir.to_path_buf(), files: Arc::new(FileDigests::load(&dir.join(FILES))) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file digests remembered in this cache (see [`files`]).
    pub fn files(&self) -> &Arc<FileDigests> {
        &self.files
    }

    /// A prober for this cache: `values` as [`Prober::new`], file contents
    /// through [`Cache::files`].
    pub fn prober(&self, values: std::collections::HashMap<String, Digest>) -> Prober {
        Prober::with_files(values, self.files.clone())
    }

    /// Save what this run learnt about file digests (at the end of a run;
    /// failing to is not an error, only a slower next run).
    pub fn save_files(&self) {
        let _ = self.files.save();
    }

    fn group_path(&self, digest: &Digest) -> PathBuf {
        self.dir.join(GROUPS).join(format!("{}.group", digest.hex()))
    }

    /// Whether the group `digest` is unchanged now (`None`) or why not;
    /// looked at once per prober.
    fn group_change(&self, digest: &Digest, prober: &Prober) -> Option<Miss> {
        if let Some(known) = prober.groups.lock().expect("groups").get(digest) {
            return known.clone();
        }
        let change = match bounded::read(&self.group_path(digest), MAX_ENTRY) {
            Err(e) => Some(Miss::Corrupt(format!("input group {}: {e}", &digest.hex()[..16]))),
            Ok(body) if group_digest(&body) != *digest => {
                // Removed, so that the next store writes it again.
                let _ = std::fs::remove_file(self.group_path(digest));
                Some(Miss::Corrupt(format!("input group {} altered", &digest.hex()[..16])))
            }
            Ok(body) => match serde_json::from_slice::<Vec<Input>>(&body) {
                Err(e) => Some(Miss::Corrupt(e.to_string())),
                Ok(inputs) => prober.first_change(&inputs).map(|(input, change)| Miss::Input {
                    what: input.what.clone(),
                    probe: input.probe.clone(),
                    change,
                }),
            },
        };
        prober.groups.lock().expect("groups").insert(*digest, change.clone());
        change
    }

    /// Write the group `inputs` if it is not there yet; its digest.
    fn store_group(&self, inputs: &[Input]) -> Result<Digest, NotStored> {
        let body = serde_json::to_vec(inputs).map_err(|e| NotStored::Io(std::io::Error::other(e)))?;
        let digest = group_digest(&body);
        let path = self.group_path(&digest);
        if !path.is_file() {
            match write_atomic(&path, &body) {
                // `clean` ran meanwhile: recreate the cache and try once more.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Cache::open(&self.dir).and_then(|_| write_atomic(&path, &body)).map_err(NotStored::Io)?
                }
                r => r.map_err(NotStored::Io)?,
            }
        }
        Ok(digest)
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(ENTRIES).join(key.file_name())
    }

    /// The payload stored for `key`, if the entry is intact and every
    /// input has the same digest now.
    pub fn lookup<P: DeserializeOwned>(&self, key: &Key, prober: &Prober) -> Lookup<P> {
        let bytes = match read_entry(&self.path(key)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss(Miss::NoEntry),
            Err(e) => return Lookup::Miss(Miss::Corrupt(e.to_string())),
        };
        let entry: Entry<P> = match decode(&bytes) {
            Ok(e) => e,
            Err(miss) => return Lookup::Miss(miss),
        };
        if entry.key != *key {
            return Lookup::Miss(Miss::Corrupt("written for another key".into()));
        }
        if let Some((input, change)) = prober.first_change(&entry.inputs) {
            return Lookup::Miss(Miss::Input { what: input.what.clone(), probe: input.probe.clone(), change });
        }
        if let Some(miss) = entry.groups.iter().find_map(|g| self.group_change(g, prober)) {
            return Lookup::Miss(miss);
        }
        Lookup::Hit(entry.payload)
    }

    /// Store `payload` for `key`, computed from `inputs`, if every input is
    /// still as recorded (looked at with `prober`, which must not have
    /// looked at anything before the computation ended).
    pub fn store<P: Serialize>(
        &self,
        key: &Key,
        inputs: &Inputs,
        payload: &P,
        prober: &Prober,
    ) -> Result<(), NotStored> {
        let sections = std::iter::once(inputs.own.as_slice()).chain(inputs.shared.iter().map(|g| g.as_slice()));
        for section in sections {
            if let Some((input, change)) = prober.first_change(section) {
                return Err(NotStored::Changed(Miss::Input {
                    what: input.what.clone(),
                    probe: input.probe.clone(),
                    change,
                }));
            }
        }
        if let Some(racy) = inputs.iter().find(|i| probe::is_racy(i)) {
            let Probe::Identity { path } = &racy.probe else { unreachable!("only identities are racy") };
            return Err(NotStored::Racy(path.clone()));
        }
        let groups = inputs
            .shared
            .iter()
            .filter(|g| !g.is_empty())
            .map(|g| self.store_group(g))
            .collect::<Result<Vec<Digest>, NotStored>>()?;
        let entry =
            Entry { patchgen: version().to_string(), key: key.clone(), inputs: inputs.own.clone(), groups, payload };
        let body = serde_json::to_vec(&entry).map_err(|e| NotStored::Io(std::io::Error::other(e)))?;
        let mut bytes =
            format!("{MAGIC} {FORMAT} {} {}\n", body.len(), probe::digest_parts([body.as_slice()]).hex()).into_bytes();
        bytes.extend_from_slice(&body);
        let path = self.path(key);
        match write_atomic(&path, &bytes) {
            // `clean` ran meanwhile: recreate the cache and try once more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Cache::open(&self.dir).and_then(|_| write_atomic(&path, &bytes)).map_err(NotStored::Io)
            }
            r => r.map_err(NotStored::Io),
        }
    }
}

/// The longest header an entry has: magic, format, length, checksum.
const MAX_HEADER: u64 = 256;

/// The bytes of the entry at `path`: a regular file (checked before it is
/// opened: a FIFO would block), of at most [`MAX_ENTRY`] bytes, whose size
/// is the header's line plus the body length the header records; read no
/// further than that.
fn read_entry(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{BufRead, Read};
    bounded::check(&std::fs::metadata(path)?, MAX_ENTRY)?;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    bounded::check(&file.metadata()?, MAX_ENTRY)?;
    let mut reader = std::io::BufReader::new(file);
    let mut bytes = Vec::new();
    (&mut reader).take(MAX_HEADER).read_until(b'\n', &mut bytes)?;
    let recorded = std::str::from_utf8(&bytes)
        .ok()
        .filter(|h| h.ends_with('\n') && h.starts_with(MAGIC))
        .and_then(|h| h.split(' ').nth(2)?.parse::<u64>().ok());
    let Some(body) = recorded else {
        // Not this format's header: `decode` says what it is.
        return Ok(bytes);
    };
    if bytes.len() as u64 + body != size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the entry is {size} bytes, its header records {}", bytes.len() as u64 + body),
        ));
    }
    reader.take(body).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An entry's body, if its header and checksum are right.
fn decode<P: DeserializeOwned>(bytes: &[u8]) -> Result<Entry<P>, Miss> {
    let newline = bytes.iter().position(|&b| b == b'\n').ok_or_else(|| Miss::Corrupt("truncated header".into()))?;
    let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| Miss::Corrupt("bad header".into()))?;
    let body = &bytes[newline + 1..];
    let mut fields = header.split(' ');
    if fields.next() != Some(MAGIC) {
        return Err(Miss::Corrupt("not a patchgen cache entry".into()));
    }
    let format = fields.next().unwrap_or_default();
    if format != FORMAT.to_string() {
        return Err(Miss::Foreign(format!("cache format {format}")));
    }
    let len: Option<usize> = fields.next().and_then(|l| l.parse().ok());
    if len != Some(body.len()) {
        return Err(Miss::Corrupt("length differs from its header (truncated or altered)".into()));
    }
    let sum = fields.next().and_then(Digest::from_hex).ok_or_else(|| Miss::Corrupt("bad checksum field".into()))?;
    if fields.next().is_some() || sum != probe::digest_parts([body]) {
        return Err(Miss::Corrupt("checksum mismatch (truncated or altered)".into()));
    }
    #[derive(Deserialize)]
    struct Version {
        patchgen: String,
    }
    let v: Version = serde_json::from_slice(body).map_err(|e| Miss::Corrupt(e.to_string()))?;
    if v.patchgen != version() {
        return Err(Miss::Foreign(format!("patchgen {}", v.patchgen)));
    }
    serde_json::from_slice(body).map_err(|e| Miss::Corrupt(e.to_string()))
}

/// The name of a group whose file holds `body`.
fn group_digest(body: &[u8]) -> Digest {
    probe::digest_parts([b"input group".as_slice(), body])
}

/// Write `bytes` to `path` through a temporary file in the same directory
/// and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // tempfile creates 0600; the cache is as readable as the project.
        let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether `dir` holds a `CACHEDIR.TAG` with the standard signature (an
/// empty or foreign file of that name does not make a cache).
fn tagged(dir: &Path) -> bool {
    let signature = TAG.lines().next().unwrap_or_default().as_bytes();
    let Ok(file) = std::fs::metadata(dir.join(TAG_FILE)) else { return false };
    file.is_file()
        && std::fs::File::open(dir.join(TAG_FILE)).is_ok_and(|f| {
            let mut head = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, signature.len() as u64), &mut head).is_ok()
                && head == signature
        })
}

/// The files [`Cache`] writes, by where they are.
#[derive(Clone, Copy)]
enum Written {
    /// `entries/<kind>-<32 hex>.entry`, starting with [`MAGIC`].
    Entry,
    /// `groups/<64 hex>.group`, a JSON list.
    Group,
    /// `files`, the file digest table.
    Files,
}

impl Written {
    fn named(self, name: &str) -> bool {
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        match self {
            Written::Entry => name.strip_suffix(".entry").and_then(|s| s.rsplit_once('-')).is_some_and(|(kind, h)| {
                !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && hex(h, 32)
            }),
            Written::Group => name.strip_suffix(".group").is_some_and(|h| hex(h, 64)),
            Written::Files => name == FILES,
        }
    }

    /// Whether the file at `path` starts as this kind of file does.
    fn starts(self, path: &Path) -> bool {
        let head: &[u8] = match self {
            Written::Entry => MAGIC.as_bytes(),
            Written::Group => b"[",
            Written::Files => files::MAGIC.as_bytes(),
        };
        std::fs::File::open(path).is_ok_and(|f| {
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, head.len() as u64), &mut got).is_ok() && got == head
        })
    }
}

/// A temporary file [`write_atomic`] left behind (`.tmp-` and a few letters or digits).
fn is_temporary(name: &str) -> bool {
    name.strip_prefix(".tmp-")
        .is_some_and(|r| (1..=16).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// What [`clean`] did.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Cleaned {
    pub dir: PathBuf,
    /// Entries removed.
    pub entries: usize,
    /// Whether the directory itself is gone (it is kept when something
    /// else is in it).
    pub removed_dir: bool,
}

/// Remove the cache at `dir`: its entries, input groups and file digest
/// table (and leftover temporary files), `.gitignore` and `CACHEDIR.TAG`, then the directory if nothing else is
/// in it. A directory without the tag is not touched (an error); a missing
/// one is nothing to do.
pub fn clean(dir: &Path) -> std::io::Result<Cleaned> {
    if !dir.exists() {
        return Ok(Cleaned { dir: dir.to_path_buf(), entries: 0, removed_dir: false });
    }
    if !tagged(dir) {
        return Err(std::io::Error::other(format!(
            "{} is not a patchgen cache (no {TAG_FILE} with the standard signature); not removing it",
            dir.display()
        )));
    }
    let mut entries = 0;
    // Each directory the cache writes to and what it writes there
    // (temporary files are `.tmp-` and a few letters or digits everywhere).
    let ours: [(&str, Written); 3] = [(ENTRIES, Written::Entry), (GROUPS, Written::Group), ("", Written::Files)];
    for (sub, kind) in ours {
        let d = dir.join(sub);
        let Ok(listing) = std::fs::read_dir(&d) else { continue };
        for item in listing.flatten() {
            if !item.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let name = item.file_name();
            let name = name.to_string_lossy();
            let wrote = kind.named(&name) && kind.starts(&item.path());
            if wrote || is_temporary(&name) {
                match std::fs::remove_file(item.path()) {
                    Ok(()) => entries += usize::from(sub == ENTRIES && wrote),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if !sub.is_empty() {
            let _ = std::fs::remove_dir(&d);
        }
    }
    // Only the very files `open` writes: a project's own `.gitignore` stays.
    for (name, text) in [(".gitignore", GITIGNORE), (TAG_FILE, TAG)] {
        let path = dir.join(name);
        if bounded::read(&path, text.len() as u64).is_ok_and(|b| b == text.as_bytes()) {
            let _ = std::fs::remove_file(path);
        }
    }
    let removed_dir = std::fs::remove_dir(dir).is_ok();
    Ok(Cleaned { dir: dir.to_path_buf(), entries, removed_dir })
}

#[cfg(test)]
mod tests;
