//! The safetensors header of one file: an 8-byte little-endian length `N`,
//! then `N` bytes of JSON `{name: {"dtype", "shape", "data_offsets": [b, e]},
//! "__metadata__": {str: str}}`, offsets relative to the first byte after
//! the header. Only those `8 + N` bytes are read, never tensor data.
//!
//! Validation (each failure is a [`HeaderError`] naming the file, the
//! tensor and, for JSON, the line and column inside the header):
//! length beyond the file or above 100 MB (the reference limit), invalid
//! UTF-8 or JSON, an entry without `dtype`/`shape`/`data_offsets`, `b > e`,
//! `e - b != prod(shape) * size(dtype)`, ranges that overlap or leave a gap
//! (sorted by offset, they must tile the data section from 0) and data that
//! ends before or beyond the end of the file. A dtype this table does not
//! know is kept (its size check is skipped) and reported by `inspect`.
//!
//! Hand-written rather than `safetensors::SafeTensors::read_metadata`: that
//! needs the whole file as a buffer, folds overlap/gap/order into one
//! "InvalidOffset", does not name the tensor whose size is wrong and fails on
//! dtypes it does not know. The crate is used as a second opinion on
//! what `moe convert` writes (`--verify`).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The reference implementation's limit on `N`.
pub const MAX_HEADER: u64 = 100_000_000;

/// One tensor's entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    /// Data range relative to the data section.
    pub begin: u64,
    pub end: u64,
}

impl TensorInfo {
    pub fn len(&self) -> u64 {
        self.end - self.begin
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.begin
    }

    /// Bytes per element, when the dtype is known and byte-sized.
    pub fn elem_size(&self) -> Option<u64> {
        dtype_bits(&self.dtype).filter(|b| b % 8 == 0).map(|b| b / 8)
    }
}

/// A parsed, validated header.
#[derive(Clone, Debug, Serialize)]
pub struct Header {
    pub path: PathBuf,
    /// `N`.
    pub header_len: u64,
    pub file_len: u64,
    /// Tensors in data order (by `begin`).
    pub tensors: Vec<TensorInfo>,
    pub metadata: Vec<(String, String)>,
}

impl Header {
    /// The absolute file offset of the data section.
    pub fn data_start(&self) -> u64 {
        8 + self.header_len
    }
}

/// A header that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderError {
    pub path: PathBuf,
    /// Where inside the file: `header line L, column C`, `tensor "x"`, ...
    pub place: String,
    pub message: String,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.place.is_empty() {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}: {}: {}", self.path.display(), self.place, self.message)
        }
    }
}

/// Bits per element of a safetensors dtype; `None` for one this table
/// does not know.
pub fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" | "F8_E4M3FNUZ" | "F8_E5M2FNUZ" => 8,
        "U16" | "I16" | "F16" | "BF16" => 16,
        "U32" | "I32" | "F32" => 32,
        "U64" | "I64" | "F64" | "C64" => 64,
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        _ => return None,
    })
}

/// Read and validate the header of `path`.
pub fn read_header(path: &Path) -> Result<Header, HeaderError> {
    let err = |place: &str, message: String| HeaderError { path: path.to_path_buf(), place: place.into(), message };
    // Looked at before opening: opening a FIFO would block.
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(err("", "not a regular file".into())),
        _ => {}
    }
    let mut file = File::open(path).map_err(|e| err("", format!("cannot open: {e}")))?;
    let file_len = file.metadata().map_err(|e| err("", format!("cannot stat: {e}")))?.len();
    let mut len = [0u8; 8];
    if file_len < 8 {
        return Err(err(
            "",
            format!("{file_len} bytes: too short for a safetensors file (8-byte header length first)"),
        ));
    }
    file.read_exact(&mut len).map_err(|e| err("", format!("cannot read: {e}")))?;
    let n = u64::from_le_bytes(len);
    check_len(n, file_len).map_err(|m| err("header length", m))?;
    let mut json = vec![0u8; n as usize];
    file.read_exact(&mut json).map_err(|e| err("", format!("cannot read the header: {e}")))?;
    parse_header(path, n, file_len, &json)
}

fn check_len(n: u64, file_len: u64) -> Result<(), String> {
    if n > MAX_HEADER {
        return Err(format!("{n} bytes, above the 100 MB limit of safetensors: not a safetensors file?"));
    }
    if n > file_len.saturating_sub(8) {
        return Err(format!("{n} bytes, beyond the end of the file ({file_len} bytes): truncated or not safetensors"));
    }
    Ok(())
}

/// Validate the `n` header bytes `json` of a file of `file_len` bytes.
///
/// A valid header is parsed straight into its tensors ([`fast`]); anything
/// that path does not accept is parsed again through `serde_json::Value`
/// ([`parse_header_exact`]), which finds and words the error.
pub fn parse_header(path: &Path, n: u64, file_len: u64, json: &[u8]) -> Result<Header, HeaderError> {
    if check_len(n, file_len).is_ok()
        && let Some(h) = fast::parse(path, n, file_len, json)
    {
        return Ok(h);
    }
    parse_header_exact(path, n, file_len, json)
}

/// [`parse_header`] through `serde_json::Value`: the reference for what is
/// valid and the source of every error message.
pub fn parse_header_exact(path: &Path, n: u64, file_len: u64, json: &[u8]) -> Result<Header, HeaderError> {
    let err = |place: String, message: String| HeaderError { path: path.to_path_buf(), place, message };
    check_len(n, file_len).map_err(|m| err("header length".into(), m))?;
    let text = std::str::from_utf8(json).map_err(|e| {
        let (l, c) = line_col(json, e.valid_up_to());
        err(format!("header line {l}, column {c}"), "invalid UTF-8 in the JSON header".into())
    })?;
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| err(format!("header line {}, column {}", e.line(), e.column()), format!("invalid JSON: {e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(err("header".into(), "the JSON header is not an object".into()));
    };
    let mut tensors = Vec::with_capacity(map.len());
    let mut metadata = Vec::new();
    for (name, entry) in map {
        if name == "__metadata__" {
            match entry {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        match v {
                            serde_json::Value::String(s) => metadata.push((k, s)),
                            _ => {
                                return Err(err(
                                    "__metadata__".into(),
                                    format!("value of \"{k}\" is not a string (safetensors allows only strings)"),
                                ));
                            }
                        }
                    }
                }
                serde_json::Value::Null => {}
                _ => return Err(err("__metadata__".into(), "not an object".into())),
            }
            continue;
        }
        let place = format!("tensor \"{name}\"");
        let serde_json::Value::Object(mut e) = entry else {
            return Err(err(place, "entry is not an object".into()));
        };
        let dtype = match e.remove("dtype") {
            Some(serde_json::Value::String(s)) => s,
            Some(_) => return Err(err(place, "\"dtype\" is not a string".into())),
            None => return Err(err(place, "no \"dtype\"".into())),
        };
        let shape = match e.remove("shape") {
            Some(serde_json::Value::Array(a)) => {
                let mut shape = Vec::with_capacity(a.len());
                for d in a {
                    match d.as_u64() {
                        Some(d) => shape.push(d),
                        None => return Err(err(place, format!("shape entry {d} is not a non-negative integer"))),
                    }
                }
                shape
            }
            Some(_) => return Err(err(place, "\"shape\" is not a list".into())),
            None => return Err(err(place, "no \"shape\"".into())),
        };
        let (begin, end) = match e.remove("data_offsets") {
            Some(serde_json::Value::Array(a)) if a.len() == 2 => match (a[0].as_u64(), a[1].as_u64()) {
                (Some(b), Some(e)) => (b, e),
                _ => return Err(err(place, "\"data_offsets\" are not non-negative integers".into())),
            },
            Some(_) => return Err(err(place, "\"data_offsets\" is not a [begin, end] pair".into())),
            None => return Err(err(place, "no \"data_offsets\"".into())),
        };
        if end < begin {
            return Err(err(place, format!("data_offsets [{begin}, {end}] are out of order (end before begin)")));
        }
        if let Err(bytes) = size_fits(&dtype, &shape, end - begin) {
            let expected = bytes.map_or("more than 2^64".to_string(), |b| b.to_string());
            return Err(err(
                place,
                format!(
                    "{} bytes of data, but {dtype} × {shape:?} needs {expected}: the size disagrees with dtype × shape",
                    end - begin
                ),
            ));
        }
        tensors.push(TensorInfo { name, dtype, shape, begin, end });
    }
    let tensors = tile(path, n, file_len, tensors)?;
    Ok(Header { path: path.to_path_buf(), header_len: n, file_len, tensors, metadata })
}

/// `tensors` in data order, when their ranges tile the data section of a
/// file of `file_len` bytes with an `n`-byte header.
fn tile(path: &Path, n: u64, file_len: u64, mut tensors: Vec<TensorInfo>) -> Result<Vec<TensorInfo>, HeaderError> {
    let err = |place: String, message: String| HeaderError { path: path.to_path_buf(), place, message };
    tensors.sort_by(|a, b| (a.begin, a.end).cmp(&(b.begin, b.end)).then_with(|| a.name.cmp(&b.name)));
    let mut at = 0u64;
    let mut prev: Option<&TensorInfo> = None;
    for t in &tensors {
        if t.begin < at {
            let p = prev.map_or(String::new(), |p| p.name.clone());
            return Err(err(
                format!("tensor \"{}\"", t.name),
                format!("data_offsets [{}, {}] overlap those of \"{p}\" (which end at {at})", t.begin, t.end),
            ));
        }
        if t.begin > at {
            return Err(err(
                format!("tensor \"{}\"", t.name),
                format!("data_offsets start at {} but the previous tensor ends at {at}: a gap in the data", t.begin),
            ));
        }
        at = t.end;
        prev = Some(t);
    }
    let data_len = file_len - 8 - n;
    if at != data_len {
        let (place, what) = match prev {
            Some(p) => (format!("tensor \"{}\"", p.name), if at > data_len { "beyond" } else { "before" }),
            None => ("data".into(), "before"),
        };
        return Err(err(
            place,
            format!(
                "the data ends at byte {} of the file, {what} its end ({file_len} bytes): truncated or trailing bytes",
                8 + n + at
            ),
        ));
    }
    Ok(tensors)
}

/// Whether `dtype × shape` takes `len` bytes (always, for a dtype this
/// table does not know); `Err` holds the bytes needed (`None`: above 2^64).
fn size_fits(dtype: &str, shape: &[u64], len: u64) -> Result<(), Option<u64>> {
    let Some(bits) = dtype_bits(dtype) else { return Ok(()) };
    let elems = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let bytes = elems.and_then(|n| n.checked_mul(bits)).map(|b| b.div_ceil(8));
    if bytes == Some(len) { Ok(()) } else { Err(bytes) }
}

fn line_col(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// The fast path of [`parse_header`]: the JSON deserialised straight into
/// tensors (no `serde_json::Value` tree), `None` for anything it does not
/// accept — including what `Value` would accept differently: a repeated
/// tensor name or metadata key (`Value` keeps the last), a repeated
/// `__metadata__`, a repeated or mistyped field. Whatever it returns, the
/// exact path returns too (a property test checks it).
mod fast {
    use std::fmt;
    use std::path::Path;

    use rustc_hash::FxHashSet;
    use serde::Deserialize;
    use serde::de::{self, Deserializer, MapAccess, Visitor};

    use super::{Header, TensorInfo, size_fits, tile};

    #[derive(Deserialize)]
    struct Entry {
        dtype: String,
        shape: Vec<u64>,
        data_offsets: [u64; 2],
    }

    /// `__metadata__`: `null` or `{str: str}`.
    struct Meta(Vec<(String, String)>);

    impl<'de> Deserialize<'de> for Meta {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Meta;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("null or an object of strings")
                }
                fn visit_unit<E: de::Error>(self) -> Result<Meta, E> {
                    Ok(Meta(Vec::new()))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Meta, A::Error> {
                    let mut out = Vec::new();
                    while let Some((k, v)) = m.next_entry::<String, String>()? {
                        out.push((k, v));
                    }
                    Ok(Meta(out))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// The header object: tensors and metadata, unvalidated.
    struct Parsed {
        tensors: Vec<TensorInfo>,
        metadata: Option<Vec<(String, String)>>,
    }

    impl<'de> Deserialize<'de> for Parsed {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parsed, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Parsed;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a safetensors header object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Parsed, A::Error> {
                    let mut p = Parsed { tensors: Vec::with_capacity(m.size_hint().unwrap_or(64)), metadata: None };
                    while let Some(name) = m.next_key::<String>()? {
                        if name == "__metadata__" {
                            if p.metadata.is_some() {
                                return Err(de::Error::custom("__metadata__ twice"));
                            }
                            p.metadata = Some(m.next_value::<Meta>()?.0);
                            continue;
                        }
                        let e: Entry = m.next_value()?;
                        let [begin, end] = e.data_offsets;
                        p.tensors.push(TensorInfo { name, dtype: e.dtype, shape: e.shape, begin, end });
                    }
                    Ok(p)
                }
            }
            d.deserialize_map(V)
        }
    }

    /// A header that passes every check of `parse_header_exact`, parsed
    /// without a `Value` tree; `None` for anything else.
    pub(super) fn parse(path: &Path, n: u64, file_len: u64, json: &[u8]) -> Option<Header> {
        let text = std::str::from_utf8(json).ok()?;
        let p: Parsed = serde_json::from_str(text).ok()?;
        let mut names: FxHashSet<&str> = FxHashSet::default();
        names.reserve(p.tensors.len());
        for t in &p.tensors {
            if t.end < t.begin || size_fits(&t.dtype, &t.shape, t.end - t.begin).is_err() || !names.insert(&t.name) {
                return None;
            }
        }
        drop(names);
        let mut metadata = p.metadata.unwrap_or_default();
        metadata.sort_by(|a, b| a.0.cmp(&b.0));
        if metadata.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        let tensors = tile(path, n, file_len, p.tensors).ok()?;
        Some(Header { path: path.to_path_buf(), header_len: n, file_len, tensors, metadata })
    }
}

#[cfg(test)]
#[path = "header_tests.rs"]
mod tests;
