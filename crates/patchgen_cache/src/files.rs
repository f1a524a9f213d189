//! Content digests of files, remembered by file identity so that a warm
//! run does not hash again what it hashed before (git's index does the
//! same for `git status`).
//!
//! Contract:
//! - [`FileDigests::digest`] is always [`probe::file_digest`] of the file
//!   as it is now. It returns a remembered digest only when the file's
//!   [`Stamp`] (device, inode, size, modification and status-change times
//!   in nanoseconds, mode) equals the stamp recorded with it.
//! - A digest is remembered only when it is safe to: the stamp is the same
//!   before and after hashing (nothing wrote the file meanwhile), and both
//!   of its times are older than [`probe::RACY`] ([`probe::RACY_COARSE`] on
//!   a file system with whole-second times) when it is recorded. A later
//!   write then sets the status-change time to a later clock tick, so it
//!   changes the stamp (the kernel sets ctime on every write and
//!   `touch -d`/`cp -p`/`tar` cannot set it back). A file written within
//!   the window ("racily clean" in git's words) is hashed on every run
//!   until it is older.
//! - The table is one file in the cache (`files`), with a checksum like an
//!   entry's: a damaged, truncated or foreign one is ignored (everything is
//!   hashed again). [`FileDigests::save`] writes it atomically when this
//!   run learnt something; concurrent runs each write a whole table (the
//!   last one wins, losing only what the other learnt).
//! - Not on unix: nothing is remembered (the identity fields are missing).

use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::probe::{self, Digest};

pub(crate) const MAGIC: &str = "patchgen-files";
const FORMAT: u32 = 1;
/// Rows beyond this many, the table keeps only what this run learnt.
const MAX_ROWS: usize = 200_000;

/// A file's identity: what changes whenever its content may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp([u64; 8]);

impl Stamp {
    /// The stamp of a regular file (`None`: not a regular file, or not on
    /// unix).
    pub fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        #[cfg(unix)]
        {
            meta.is_file().then(|| Stamp(probe::identity_fields(meta)))
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// Whether both times are old enough, now, for a later write to change
    /// them (see the module doc).
    pub fn settled(&self, now: std::time::SystemTime) -> bool {
        let [_, _, _, ms, mns, cs, cns, _] = self.0;
        let coarse = mns == 0 && cns == 0;
        let window = if coarse { probe::RACY_COARSE } else { probe::RACY };
        [(ms, mns), (cs, cns)].iter().all(|&(s, ns)| {
            // Times before 1970 or absurdly far away are never settled.
            let Some(t) = std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(s, ns as u32)) else {
                return false;
            };
            now.duration_since(t).is_ok_and(|age| age > window)
        })
    }
}

/// Remembered digests (see the module doc).
#[derive(Debug, Default)]
pub struct FileDigests {
    /// Where the table is saved (`None`: nowhere, nothing is remembered
    /// across runs).
    file: Option<PathBuf>,
    known: HashMap<PathBuf, (Stamp, Digest)>,
    /// Learnt this run.
    learnt: Mutex<HashMap<PathBuf, (Stamp, Digest)>>,
}

impl FileDigests {
    /// The table saved at `file` (empty when missing or not intact).
    pub fn load(file: &Path) -> FileDigests {
        let known = crate::bounded::read(file, crate::bounded::DEFAULT_MAX_FILE_SIZE)
            .ok()
            .and_then(|b| decode(&b))
            .unwrap_or_default();
        FileDigests { file: Some(file.to_path_buf()), known, learnt: Default::default() }
    }

    /// [`probe::file_digest`] of `path`, remembered by its stamp.
    pub fn digest(&self, path: &Path) -> std::io::Result<Digest> {
        let meta = std::fs::metadata(path)?;
        let Some(stamp) = Stamp::of(&meta) else { return probe::file_digest(path) };
        if let Some((s, d)) = self.known.get(path)
            && *s == stamp
        {
            return Ok(*d);
        }
        if let Some((s, d)) = self.learnt.lock().expect("file digests").get(path)
            && *s == stamp
        {
            return Ok(*d);
        }
        let digest = probe::file_digest(path)?;
        let now = std::time::SystemTime::now();
        let after = std::fs::metadata(path).ok().and_then(|m| Stamp::of(&m));
        if self.file.is_some() && after == Some(stamp) && stamp.settled(now) {
            self.learnt.lock().expect("file digests").insert(path.to_path_buf(), (stamp, digest));
        }
        Ok(digest)
    }

    /// Write the table if this run learnt a digest.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        let learnt = self.learnt.lock().expect("file digests");
        if learnt.is_empty() {
            return Ok(());
        }
        let mut rows: Vec<(&PathBuf, &(Stamp, Digest))> = if self.known.len() + learnt.len() > MAX_ROWS {
            learnt.iter().collect()
        } else {
            self.known.iter().filter(|(p, _)| !learnt.contains_key(*p)).chain(learnt.iter()).collect()
        };
        rows.sort_by(|a, b| a.0.cmp(b.0));
        let mut body = String::new();
        for (path, (stamp, digest)) in rows {
            // A path with a newline cannot be a row; it is hashed every run.
            let Some(p) = path.to_str().filter(|p| !p.contains('\n')) else { continue };
            use std::fmt::Write;
            let _ = write!(body, "{}", digest.hex());
            for f in stamp.0 {
                let _ = write!(body, " {f}");
            }
            let _ = writeln!(body, " {p}");
        }
        let mut bytes = format!("{MAGIC} {FORMAT} {}\n", probe::digest_parts([body.as_bytes()]).hex()).into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        super::write_atomic(file, &bytes)
    }
}

fn decode(bytes: &[u8]) -> Option<HashMap<PathBuf, (Stamp, Digest)>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (header, body) = text.split_once('\n')?;
    let mut fields = header.split(' ');
    if fields.next()? != MAGIC || fields.next()? != FORMAT.to_string() {
        return None;
    }
    let sum = Digest::from_hex(fields.next()?)?;
    if fields.next().is_some() || sum != probe::digest_parts([body.as_bytes()]) {
        return None;
    }
    let mut out = HashMap::default();
    for line in body.lines() {
        let mut parts = line.splitn(10, ' ');
        let digest = Digest::from_hex(parts.next()?)?;
        let mut stamp = [0u64; 8];
        for f in &mut stamp {
            *f = parts.next()?.parse().ok()?;
        }
        out.insert(PathBuf::from(parts.next()?), (Stamp(stamp), digest));
    }
    Some(out)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn age(path: &Path, secs: u64) {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(old).unwrap();
    }

    #[test]
    fn remembers_settled_files_and_sees_every_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("files");
        let f = dir.path().join("a.py");
        std::fs::write(&f, "x = 1\n").unwrap();
        // Fresh (racily clean): hashed, not remembered.
        let fd = FileDigests::load(&table);
        assert_eq!(fd.digest(&f).unwrap(), probe::file_digest(&f).unwrap());
        fd.save().unwrap();
        assert!(!table.exists());

        // Settled (times older than the window): remembered and saved.
        age(&f, 10);
        std::thread::sleep(probe::RACY + std::time::Duration::from_millis(20));
        let fd = FileDigests::load(&table);
        let d1 = fd.digest(&f).unwrap();
        fd.save().unwrap();
        let fd = FileDigests::load(&table);
        assert_eq!(fd.known.get(&f).map(|r| r.1), Some(d1));
        assert_eq!(fd.digest(&f).unwrap(), d1);

        // A same-size rewrite with the old mtime put back: ctime differs.
        std::fs::write(&f, "x = 2\n").unwrap();
        age(&f, 10);
        let fd = FileDigests::load(&table);
        let d2 = fd.digest(&f).unwrap();
        assert_ne!(d1, d2);
        assert_eq!(d2, probe::file_digest(&f).unwrap());

        // A damaged table is ignored.
        let mut bytes = std::fs::read(&table).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 1;
        std::fs::write(&table, bytes).unwrap();
        assert!(FileDigests::load(&table).known.is_empty());
    }

    #[test]
    fn missing_files_and_directories_are_errors_as_for_file_digest() {
        let dir = tempfile::tempdir().unwrap();
        let fd = FileDigests::load(&dir.path().join("files"));
        assert!(fd.digest(&dir.path().join("nope")).is_err());
        assert!(fd.digest(dir.path()).is_err());
    }
}
