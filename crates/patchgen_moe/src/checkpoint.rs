//! A checkpoint's tensors, from its headers: a directory with
//! `model.safetensors.index.json` (`{"metadata": {"total_size": N},
//! "weight_map": {name: file}}`), a directory with one `model.safetensors`
//! (or, failing both, every `*.safetensors` in it), or one `.safetensors`
//! file. Shard headers are read in parallel; an index naming a missing file,
//! or a tensor its shard does not hold, is a located error.
//!
//! A local index is read twice over only when something is wrong: first
//! straight into its weight map (`fast_index`), and if anything there or in
//! the shards is off, again through `serde_json::Value` and the sorted map,
//! the reference path that words every error (`from_index_exact`; the
//! remote reader uses it always).

use std::path::{Path, PathBuf};

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::header::{Header, HeaderError, TensorInfo, read_header};

pub const INDEX: &str = "model.safetensors.index.json";
pub const SINGLE: &str = "model.safetensors";

/// Every shard's header and where each tensor is.
pub struct Checkpoint {
    /// The directory (the file's directory for a single file).
    pub dir: PathBuf,
    /// The index file, when there is one.
    pub index: Option<PathBuf>,
    pub shards: Vec<Header>,
    /// name → (shard, position in the shard's `tensors`), hashed by name
    /// but holding no copy of it: a lookup compares with the header's own
    /// (100k names are 100k fewer allocations to make and free).
    by_name: HashTable<(u32, u32)>,
}

fn hash(name: &str) -> u64 {
    FxBuildHasher.hash_one(name)
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
        let text = patchgen_cache::bounded::read_to_string(index, patchgen_cache::bounded::DEFAULT_MAX_FILE_SIZE)
            .map_err(|e| format!("{}: {e}", index.display()))?;
        // The index parses on one core while the headers of the directory's
        // `.safetensors` files (nearly always the files it names) are read
        // on the other.
        let (map, listed) = rayon::join(|| fast_index::parse(&text), || read_listed(dir));
        if let Some(ck) = map.and_then(|m| Checkpoint::from_index_fast(dir, index, m, listed)) {
            return Ok(ck);
        }
        Checkpoint::from_index_exact(dir, index, &text)
    }

    /// [`Checkpoint::from_index`] through `serde_json::Value` and the
    /// sorted weight map: the reference, and the source of every error.
    fn from_index_exact(dir: &Path, index: &Path, text: &str) -> Result<Checkpoint, String> {
        let (files, wanted) = parse_index(index, text)?;
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

    /// [`Checkpoint::from_index`] when nothing is wrong: the index
    /// deserialised straight into its weight map (file names interned, no
    /// `Value` tree, no sorted copy of 100k names), checked against the
    /// headers by shard number. `None` for anything unusual — a failed
    /// read or check, a file name that is not a plain name in `dir`, a
    /// repeated `weight_map` — and the exact path then finds and words it.
    /// A repeated tensor name naming two files fails the check (a tensor
    /// is in one shard), so success means the `Value` map, which keeps the
    /// last, would have named the same files.
    /// `listed` holds the headers already read, by file name; those of
    /// files the index does not name are dropped, errors included.
    fn from_index_fast(
        dir: &Path,
        index: &Path,
        map: fast_index::WeightMap<'_>,
        mut listed: FxHashMap<String, Result<Header, HeaderError>>,
    ) -> Option<Checkpoint> {
        if !map.files.iter().all(|f| Path::new(f.as_ref()).file_name() == Some(std::ffi::OsStr::new(f.as_ref()))) {
            return None;
        }
        let mut order: Vec<usize> = (0..map.files.len()).collect();
        order.sort_by(|&a, &b| map.files[a].cmp(&map.files[b]));
        let mut shard_of = vec![0usize; order.len()];
        for (k, &i) in order.iter().enumerate() {
            shard_of[i] = k;
        }
        let shards: Vec<Header> = order
            .iter()
            .map(|&i| match listed.remove(map.files[i].as_ref()) {
                Some(h) => h.ok(),
                None => read_header(&dir.join(map.files[i].as_ref())).ok(),
            })
            .collect::<Option<_>>()?;
        let ck = Checkpoint::from_shards(dir.to_path_buf(), Some(index.to_path_buf()), shards).ok()?;
        let all_there = map
            .entries
            .iter()
            .all(|(name, file)| ck.position(name).is_some_and(|(s, _)| s == shard_of[*file as usize]));
        all_there.then_some(ck)
    }

    /// Every `(tensor, file)` of the weight map is in that file's header.
    pub(crate) fn check_weight_map(&self, index: &Path, wanted: &[(String, String)]) -> Result<(), String> {
        for (name, file) in wanted {
            let ok = self.position(name).is_some_and(|(s, _)| self.shards[s].path.file_name() == Some(file.as_ref()));
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
        let name_of = |&(s, t): &(u32, u32)| shards[s as usize].tensors[t as usize].name.as_str();
        let mut by_name: HashTable<(u32, u32)> = HashTable::with_capacity(shards.iter().map(|s| s.tensors.len()).sum());
        for (si, s) in shards.iter().enumerate() {
            for (ti, t) in s.tensors.iter().enumerate() {
                let h = hash(&t.name);
                if let Some(&(other, _)) = by_name.find(h, |e| name_of(e) == t.name) {
                    return Err(format!(
                        "{}: tensor \"{}\" is also in {}: a checkpoint holds each tensor once",
                        s.path.display(),
                        t.name,
                        shards[other as usize].path.display()
                    ));
                }
                by_name.insert_unique(h, (si as u32, ti as u32), |e| hash(name_of(e)));
            }
        }
        Ok(Checkpoint { dir, index, shards, by_name })
    }

    /// Where tensor `name` is: (shard, position in the shard's `tensors`).
    pub fn position(&self, name: &str) -> Option<(usize, usize)> {
        let &(s, t) =
            self.by_name.find(hash(name), |&(s, t)| self.shards[s as usize].tensors[t as usize].name == name)?;
        Some((s as usize, t as usize))
    }

    pub fn tensor(&self, name: &str) -> Option<(usize, &TensorInfo)> {
        let (s, t) = self.position(name)?;
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
pub type WeightMap = Vec<(String, String)>;

/// The files an index names (sorted, once each) and its `(tensor, file)`
/// pairs; `index` names it in errors.
/// [`parse_index`] for callers outside the crate (the fuzz replay): its
/// refusal as a [`crate::error::MoeError`].
pub fn read_index(index: &Path, text: &str) -> Result<(Vec<String>, WeightMap), crate::error::MoeError> {
    parse_index(index, text).map_err(crate::error::MoeError::Checkpoint)
}

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
        // A shard sits next to its index: `../x`, `/dev/zero` or `a/b` would
        // read outside the checkpoint.
        if Path::new(file).file_name() != Some(std::ffi::OsStr::new(file)) || file == ".." {
            return Err(format!(
                "{}: weight_map[\"{name}\"] is `{file}`, not a file name in the checkpoint's directory",
                index.display()
            ));
        }
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

/// The headers of the `.safetensors` files in `dir` (by file name), read
/// in parallel; empty when the directory cannot be listed.
fn read_listed(dir: &Path) -> FxHashMap<String, Result<Header, HeaderError>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return FxHashMap::default() };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".safetensors"))
        .collect();
    names.into_par_iter().map(|n| (read_header(&dir.join(&n)), n)).map(|(h, n)| (n, h)).collect()
}

fn read_all(files: &[PathBuf]) -> Result<Vec<Header>, String> {
    let results: Vec<_> = files.par_iter().map(|f| read_header(f)).collect();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(r.map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// The fast path's reading of an index: `weight_map` deserialised straight
/// into `(tensor, file number)` pairs, names borrowed from the text where
/// they have no escapes. Any other shape of document is `None`.
mod fast_index {
    use std::borrow::Cow;
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

    pub(super) struct WeightMap<'a> {
        /// The files, in order of first mention.
        pub files: Vec<Cow<'a, str>>,
        /// `(tensor, index into files)`, in the document's order.
        pub entries: Vec<(Cow<'a, str>, u32)>,
    }

    pub(super) fn parse(text: &str) -> Option<WeightMap<'_>> {
        serde_json::from_str::<Top<'_>>(text).ok()?.0
    }

    /// A JSON string, borrowed when it can be.
    struct Str<'a>(Cow<'a, str>);

    impl<'de> Deserialize<'de> for Str<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'de>, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Str<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Borrowed(s)))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Owned(s.to_string())))
                }
            }
            d.deserialize_str(V)
        }
    }

    struct Top<'a>(Option<WeightMap<'a>>);

    impl<'de> Deserialize<'de> for Top<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Top<'de>, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Top<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an index object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Top<'de>, A::Error> {
                    let mut out = None;
                    while let Some(key) = m.next_key::<Str<'de>>()? {
                        if key.0 != "weight_map" {
                            m.next_value::<IgnoredAny>()?;
                        } else if out.is_some() {
                            return Err(de::Error::custom("weight_map twice"));
                        } else {
                            out = Some(m.next_value::<Map<'de>>()?.0);
                        }
                    }
                    Ok(Top(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    struct Map<'a>(WeightMap<'a>);

    impl<'de> Deserialize<'de> for Map<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Map<'de>, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Map<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a weight_map object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Map<'de>, A::Error> {
                    let mut w =
                        WeightMap { files: Vec::new(), entries: Vec::with_capacity(m.size_hint().unwrap_or(1024)) };
                    let mut ids: rustc_hash::FxHashMap<Cow<'de, str>, u32> = rustc_hash::FxHashMap::default();
                    // Consecutive tensors are nearly always in the same file.
                    let mut last: Option<u32> = None;
                    while let Some(name) = m.next_key::<Str<'de>>()? {
                        let file = m.next_value::<Str<'de>>()?.0;
                        let id = match last {
                            Some(id) if w.files[id as usize] == file => id,
                            _ => *ids.entry(file).or_insert_with_key(|f| {
                                w.files.push(f.clone());
                                (w.files.len() - 1) as u32
                            }),
                        };
                        last = Some(id);
                        w.entries.push((name.0, id));
                    }
                    Ok(Map(w))
                }
            }
            d.deserialize_map(V)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard holding one `U8 [1]` tensor per name.
    fn shard(path: &Path, names: &[&str]) {
        let entries: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                format!(
                    "{}:{{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[{k},{}]}}",
                    crate::json::string(n),
                    k + 1
                )
            })
            .collect();
        let json = format!("{{{}}}", entries.join(","));
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(json.as_bytes());
        bytes.resize(bytes.len() + names.len(), 0);
        std::fs::write(path, bytes).unwrap();
    }

    fn outcome(r: Result<Checkpoint, String>) -> String {
        match r {
            Ok(ck) => {
                let mut names: Vec<_> = ck.tensors().map(|(_, t)| (&t.name, ck.position(&t.name))).collect();
                names.sort();
                format!("{:?} {:?} {:?} {names:?}", ck.dir, ck.index, ck.shards)
            }
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn the_fast_index_path_agrees_with_the_exact_one() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        shard(&d.join("a.safetensors"), &["x.0", "x.1", "y"]);
        shard(&d.join("b.safetensors"), &["x.2", "z\u{e9}"]);
        shard(&d.join("c.safetensors"), &["w"]);
        std::fs::create_dir(d.join("sub")).unwrap();
        shard(&d.join("sub/c.safetensors"), &["w"]);
        // Read with the directory's other shards, never named: ignored.
        std::fs::write(d.join("junk.safetensors"), b"not a safetensors file").unwrap();
        let index = d.join(INDEX);
        let base = r#""x.0":"a.safetensors","x.1":"a.safetensors","y":"a.safetensors","x.2":"b.safetensors","z\u00e9":"b.safetensors""#;
        // (index text, whether the fast path takes it)
        let cases = [
            (format!(r#"{{"metadata":{{"total_size":5}},"weight_map":{{{base}}}}}"#), true),
            (format!(r#"{{"weight_map":{{{base},"w":"c.safetensors"}},"extra":[1,{{"a":null}}]}}"#), true),
            // The same tensor twice, same file; then a second file (Value keeps the last).
            (format!(r#"{{"weight_map":{{{base},"y":"a.safetensors"}}}}"#), true),
            (format!(r#"{{"weight_map":{{{base},"y":"c.safetensors"}}}}"#), false),
            (format!(r#"{{"weight_map":{{"y":"c.safetensors",{base}}}}}"#), false),
            // Not a plain file name; a missing file; a tensor not in its file.
            (format!(r#"{{"weight_map":{{{base},"w":"sub/c.safetensors"}}}}"#), false),
            (format!(r#"{{"weight_map":{{{base},"w":"./c.safetensors"}}}}"#), false),
            (format!(r#"{{"weight_map":{{{base},"v":"gone.safetensors"}}}}"#), false),
            (format!(r#"{{"weight_map":{{{base},"v":"c.safetensors"}}}}"#), false),
            // Two weight maps, none, a file that is not a string, not JSON.
            (format!(r#"{{"weight_map":{{}},"weight_map":{{{base}}}}}"#), false),
            (r#"{"metadata":{}}"#.to_string(), false),
            (format!(r#"{{"weight_map":{{{base},"w":3}}}}"#), false),
            (format!(r#"{{"weight_map":{{{base}}}"#), false),
            (r#"{"weight_map":{}}"#.to_string(), true),
        ];
        for (text, fast) in cases {
            std::fs::write(&index, &text).unwrap();
            let got = fast_index::parse(&text).and_then(|m| Checkpoint::from_index_fast(d, &index, m, read_listed(d)));
            assert_eq!(got.is_some(), fast, "{text}");
            let exact = outcome(Checkpoint::from_index_exact(d, &index, &text));
            if let Some(ck) = got {
                assert_eq!(outcome(Ok(ck)), exact, "{text}");
            }
            assert_eq!(outcome(Checkpoint::open_local(d)), exact, "{text}");
        }
    }
}
