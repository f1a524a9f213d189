//! A wheel's members, read and checked against its `*.dist-info/RECORD`
//! (PEP 376/427: `path,sha256=<urlsafe base64, no padding>,size`). A member
//! whose bytes do not hash to its RECORD entry, or that RECORD does not
//! list, is an error: the bytes are never handed out unchecked.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

/// An opened wheel with its RECORD.
pub struct Wheel {
    pub path: PathBuf,
    zip: zip::ZipArchive<BufReader<File>>,
    /// Member name → index, every member.
    index: HashMap<String, usize>,
    /// member → (`sha256=…` digest, size), as RECORD lists them.
    record: HashMap<String, (String, Option<u64>)>,
    pub record_name: String,
}

/// Why a wheel member could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelError {
    Open { path: PathBuf, message: String },
    NoRecord { path: PathBuf },
    Missing { path: PathBuf, member: String },
    NotInRecord { path: PathBuf, member: String },
    HashMismatch { path: PathBuf, member: String, expected: String, actual: String },
    SizeMismatch { path: PathBuf, member: String, expected: u64, actual: u64 },
}

impl std::fmt::Display for WheelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WheelError::Open { path, message } => {
                write!(f, "{}: cannot read the wheel: {message}", path.display())
            }
            WheelError::NoRecord { path } => write!(
                f,
                "{}: the wheel has no *.dist-info/RECORD, so its files cannot be verified\n  help: delete it from the wheel cache and fetch it again",
                path.display()
            ),
            WheelError::Missing { path, member } => {
                write!(f, "{}: no member `{member}`", path.display())
            }
            WheelError::NotInRecord { path, member } => write!(
                f,
                "{}: `{member}` is not listed in the wheel's RECORD, so it cannot be verified\n  help: the wheel was altered; delete it from the wheel cache and fetch it again",
                path.display()
            ),
            WheelError::HashMismatch { path, member, expected, actual } => write!(
                f,
                "{}: `{member}` does not match the wheel's RECORD (RECORD sha256={expected}, file sha256={actual})\n  help: the wheel is corrupt or was altered; delete it from the wheel cache and fetch it again",
                path.display()
            ),
            WheelError::SizeMismatch { path, member, expected, actual } => write!(
                f,
                "{}: `{member}` is {actual} bytes but the wheel's RECORD says {expected}\n  help: the wheel is corrupt or was altered; delete it from the wheel cache and fetch it again",
                path.display()
            ),
        }
    }
}

/// `sha256=` digest as RECORD spells it: urlsafe base64 without padding.
pub fn record_digest(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// RECORD's rows: `path,hash,size` (CSV; paths with commas are quoted).
fn parse_record(text: &str) -> HashMap<String, (String, Option<u64>)> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let fields = csv_fields(line);
        let [path, hash, size] = fields.as_slice() else {
            continue;
        };
        let Some(digest) = hash.strip_prefix("sha256=") else {
            continue;
        };
        out.insert(path.clone(), (digest.to_string(), size.parse().ok()));
    }
    out
}

/// One CSV line's fields (RFC 4180 quoting, as Python's `csv` writes it).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

impl Wheel {
    pub fn open(path: &Path) -> Result<Wheel, WheelError> {
        let open_err = |message: String| WheelError::Open { path: path.to_path_buf(), message };
        let file = File::open(path).map_err(|e| open_err(e.to_string()))?;
        let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| open_err(e.to_string()))?;
        let mut index = HashMap::new();
        for i in 0..zip.len() {
            if let Some(Ok(name)) = zip.name_for_index(i) {
                index.insert(name.to_string(), i);
            }
        }
        let record_name = index
            .keys()
            .filter(|n| n.ends_with(".dist-info/RECORD") && n.matches('/').count() == 1)
            .min()
            .cloned()
            .ok_or_else(|| WheelError::NoRecord { path: path.to_path_buf() })?;
        let mut text = String::new();
        zip.by_index(index[&record_name])
            .map_err(|e| open_err(e.to_string()))?
            .take(patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
            .read_to_string(&mut text)
            .map_err(|e| open_err(format!("{record_name}: {e}")))?;
        Ok(Wheel { path: path.to_path_buf(), zip, index, record: parse_record(&text), record_name })
    }

    /// Every member name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.index.keys().map(String::as_str)
    }

    pub fn contains(&self, member: &str) -> bool {
        self.index.contains_key(member)
    }

    /// The directory names directly under `dir/` (`transformers/models`).
    pub fn subdirs(&self, dir: &str) -> BTreeSet<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.names()
            .filter_map(|n| n.strip_prefix(&prefix)?.split_once('/').map(|(d, _)| d.to_string()))
            .filter(|d| !d.is_empty() && d != "__pycache__")
            .collect()
    }

    /// The file names directly in `dir/`.
    pub fn files_in(&self, dir: &str) -> BTreeSet<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.names()
            .filter_map(|n| n.strip_prefix(&prefix).filter(|rest| !rest.is_empty() && !rest.contains('/')))
            .map(str::to_string)
            .collect()
    }

    /// A member's bytes, checked against RECORD.
    pub fn read_verified(&mut self, member: &str) -> Result<Vec<u8>, WheelError> {
        let err_path = self.path.clone();
        let Some((expected, size)) = self.record.get(member).cloned() else {
            return Err(if self.contains(member) {
                WheelError::NotInRecord { path: err_path, member: member.into() }
            } else {
                WheelError::Missing { path: err_path, member: member.into() }
            });
        };
        let idx = *self
            .index
            .get(member)
            .ok_or_else(|| WheelError::Missing { path: err_path.clone(), member: member.into() })?;
        let mut entry = self
            .zip
            .by_index(idx)
            .map_err(|_| WheelError::Missing { path: err_path.clone(), member: member.into() })?;
        let mut bytes = Vec::new();
        // A compressed member can expand to anything: read one byte past the limit at most.
        (&mut entry)
            .take(patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| WheelError::Open { path: err_path.clone(), message: format!("{member}: {e}") })?;
        if bytes.len() as u64 > patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE {
            let e = patchgen_cache::bounded::too_large(entry.size(), patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE);
            return Err(WheelError::Open { path: err_path, message: format!("{member}: {e}") });
        }
        if let Some(size) = size.filter(|&s| s != bytes.len() as u64) {
            return Err(WheelError::SizeMismatch {
                path: err_path,
                member: member.into(),
                expected: size,
                actual: bytes.len() as u64,
            });
        }
        let actual = record_digest(&bytes);
        if actual != expected {
            return Err(WheelError::HashMismatch { path: err_path, member: member.into(), expected, actual });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_urlsafe_without_padding() {
        // python3 -c "import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'abc').digest()).rstrip(b'='))"
        assert_eq!(record_digest(b"abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    }

    #[test]
    fn record_rows_with_quotes() {
        let r = parse_record("a.py,sha256=xyz,12\n\"we,ird.py\",sha256=q,3\npkg.dist-info/RECORD,,\n");
        assert_eq!(r["a.py"], ("xyz".to_string(), Some(12)));
        assert_eq!(r["we,ird.py"].0, "q");
        assert!(!r.contains_key("pkg.dist-info/RECORD"));
    }
}
