//! Results shared between the configs of one run. A model's configs (GPU,
//! NPU, …) override the same methods of the same upstream classes, so the
//! prepared replacements and the rewritten classes repeat: on VeOmni, 175
//! rewritten classes of which 117 are distinct. The keys hold whole
//! sources: hashed with FxHash, which reads them 8 bytes at a time
//! (SipHash cost 4 % of generation).

use std::hash::Hash;
use std::path::PathBuf;
use std::sync::Mutex;

use rustc_hash::FxHashMap as HashMap;

use super::CodegenError;

/// What `prepare_override` depends on: the replacement's name and source,
/// the patch's `name_map`, the method's name.
pub(super) type OverrideKey = (String, String, Option<Vec<(String, String)>>, String);

/// A prepared override: its text, and each line's index in the
/// replacement's source.
pub(super) type Prepared = (String, std::sync::Arc<Vec<u32>>);

/// A rewritten class: the upstream file, where the class's name starts in
/// it, and the (method, prepared source) overrides in order.
pub(super) type ClassKey = (PathBuf, u32, Vec<(String, String)>);

/// Memoised generation steps; share one between the configs of a run.
#[derive(Default)]
pub struct Cache {
    /// The prepared text and, per line, its line in the replacement's source.
    pub(super) overrides: Mutex<HashMap<OverrideKey, Option<Prepared>>>,
    pub(super) classes: Mutex<HashMap<ClassKey, Result<super::methods::TracedClass, CodegenError>>>,
}

/// `map[key]`, computing it with `compute` (outside the lock) the first time.
pub(super) fn memo<K: Hash + Eq, V: Clone>(map: &Mutex<HashMap<K, V>>, key: K, compute: impl FnOnce() -> V) -> V {
    if let Some(v) = map.lock().expect("codegen cache").get(&key) {
        return v.clone();
    }
    let v = compute();
    map.lock().expect("codegen cache").insert(key, v.clone());
    v
}
