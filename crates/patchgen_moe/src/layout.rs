//! Expert-layout families of a checkpoint, from tensor names, shapes and
//! dtypes alone (H = hidden_size, I = MoE intermediate, E = experts):
//!
//! | family | keys under `<P>.experts` | shapes |
//! |---|---|---|
//! | A per-expert | `{j}.gate_proj/up_proj/down_proj.weight` | `[I,H]`, `[I,H]`, `[H,I]` |
//! | A' mixtral | `{j}.w1/w3/w2.weight` (w1 gate, w3 up, w2 down) | same |
//! | B fused transposed | `gate_up_proj`, `down_proj` | `[E,H,2I]`, `[E,I,H]` |
//! | C fused (v5) | `gate_up_proj`, `down_proj` | `[E,2I,H]`, `[E,H,I]` |
//! | D legacy stacked | `gate_proj`, `up_proj`, `down_proj` | `[E,I,H]`, `[E,I,H]`, `[E,H,I]` |
//! | E gpt_oss | `gate_up_proj(_bias)`, `down_proj(_bias)` | `[E,H,2I]` interleaved, `[E,I,H]` |
//!
//! `<P>` is any prefix (`model.layers.3.mlp`, `thinker.model.layers.0.mlp`,
//! `model.language_model.layers.1.mlp`); `shared_experts` is never an
//! expert module. B and C differ only by shape: when `H == 2I` (gate/up)
//! or `H == I` (down) a fused tensor fits both, and the group is marked
//! ambiguous — never guessed. Quantised siblings (`weight_scale_inv`,
//! `scale`, `_blocks`, `_scales`, ...) and packed dtypes are reported.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use super::checkpoint::Checkpoint;
use super::config::MoeDims;
use super::header::TensorInfo;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Family {
    /// A: `experts.{j}.gate_proj/up_proj/down_proj.weight`.
    PerExpert,
    /// A': `experts.{j}.w1/w3/w2.weight`.
    Mixtral,
    /// B: `[E,H,2I]`, `[E,I,H]`.
    FusedTransposed,
    /// C: `[E,2I,H]`, `[E,H,I]`.
    Fused,
    /// B or C: the shapes fit both (square per-expert matrices).
    FusedUndecided,
    /// D: `experts.gate_proj/up_proj` `[E,I,H]`, `down_proj` `[E,H,I]`.
    LegacyStacked,
    /// E: gpt_oss interleaved gate/up with biases.
    GptOss,
    /// Keys of several families, or none that fits.
    Unknown,
}

impl Family {
    pub fn letter(self) -> &'static str {
        match self {
            Family::PerExpert => "A",
            Family::Mixtral => "A'",
            Family::FusedTransposed => "B",
            Family::Fused => "C",
            Family::FusedUndecided => "B|C",
            Family::LegacyStacked => "D",
            Family::GptOss => "E",
            Family::Unknown => "?",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Family::PerExpert => "per-expert split (experts.{j}.gate_proj/up_proj/down_proj)",
            Family::Mixtral => "per-expert, mixtral naming (experts.{j}.w1/w3/w2)",
            Family::FusedTransposed => "fused transposed (gate_up_proj [E,H,2I], down_proj [E,I,H])",
            Family::Fused => "fused v5 (gate_up_proj [E,2I,H], down_proj [E,H,I])",
            Family::FusedUndecided => "fused, transposed or not: undecidable by shape",
            Family::LegacyStacked => "legacy stacked (experts.gate_proj/up_proj [E,I,H], down_proj [E,H,I])",
            Family::GptOss => "gpt_oss native (gate_up_proj [E,H,2I] interleaved, with biases)",
            Family::Unknown => "unrecognised expert keys",
        }
    }
}

/// The three projections, whatever a family calls them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Proj {
    Gate,
    Up,
    Down,
}

/// One `<P>.experts` module.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    /// `<P>`, e.g. `model.layers.3.mlp`.
    pub prefix: String,
    /// The layer stack (`model.layers`) and the module under the layer (`mlp`).
    pub stack: String,
    pub module: String,
    pub layer: Option<u64>,
    pub family: Family,
    /// Experts found (per-expert: distinct ids; fused: dim 0).
    pub experts: u64,
    /// Per-expert weights: proj → expert id → tensor name.
    #[serde(skip)]
    pub per_expert: BTreeMap<Proj, BTreeMap<u64, String>>,
    /// Fused/stacked tensors: `gate_up_proj`, `down_proj`, `gate_proj`, ... → name.
    #[serde(skip)]
    pub fused: BTreeMap<String, String>,
    pub dtypes: Vec<String>,
    /// Quantisation siblings or packed dtypes found (their suffixes).
    pub quantised: Vec<String>,
    /// Other tensors under `experts` (biases of per-expert weights, ...).
    pub extra: Vec<String>,
    /// Ambiguity notes (`H == 2I` ...): a converter must be told the layout.
    pub ambiguous: Vec<String>,
    /// Incompleteness and mismatches, each naming what is wrong.
    pub problems: Vec<String>,
}

const QUANT_SUFFIXES: [&str; 9] =
    ["weight_scale_inv", "weight_scale", "scale", "scales", "qweight", "qzeros", "g_idx", "blocks", "input_scale"];

fn is_packed(dtype: &str) -> bool {
    dtype.starts_with("F8")
        || dtype.starts_with("F4")
        || dtype.starts_with("F6")
        || matches!(dtype, "I8" | "U8" | "I32")
}

fn per_expert_proj(name: &str) -> Option<(Proj, bool)> {
    Some(match name {
        "gate_proj" => (Proj::Gate, false),
        "up_proj" => (Proj::Up, false),
        "down_proj" => (Proj::Down, false),
        "w1" => (Proj::Gate, true),
        "w3" => (Proj::Up, true),
        "w2" => (Proj::Down, true),
        _ => return None,
    })
}

/// Split a tensor name at its routed `experts` segment: (prefix, rest).
pub fn split_experts(name: &str) -> Option<(&str, &str)> {
    // The first `.experts` that ends a segment, and is not the first one.
    const SEG: &[u8] = b".experts";
    let b = name.as_bytes();
    let mut from = 0;
    while let Some(k) = memchr::memmem::find(&b[from..], SEG) {
        let at = from + k;
        let end = at + SEG.len();
        if end == b.len() || b[end] == b'.' {
            return Some((&name[..at], name.get(end + 1..).unwrap_or("")));
        }
        from = at + 1;
    }
    None
}

/// A name under `experts.`, by its `.`-separated segments.
#[derive(Clone, Copy)]
enum Segments<'a> {
    One(&'a str),
    Three(&'a str, &'a str, &'a str),
    Other,
}

fn segments(rest: &str) -> Segments<'_> {
    // Short names: a plain loop beats memchr's setup.
    let mut dots = rest.bytes().enumerate().filter(|&(_, b)| b == b'.').map(|(k, _)| k);
    match (dots.next(), dots.next(), dots.next()) {
        (None, _, _) => Segments::One(rest),
        (Some(a), Some(b), None) => Segments::Three(&rest[..a], &rest[a + 1..b], &rest[b + 1..]),
        _ => Segments::Other,
    }
}

/// `(stack, layer, module)` of a prefix `a.b.layers.3.mlp`.
fn stack_of(prefix: &str) -> (String, Option<u64>, String) {
    let segs: Vec<&str> = prefix.split('.').collect();
    for k in (0..segs.len().saturating_sub(1)).rev() {
        if let Ok(l) = segs[k + 1].parse::<u64>() {
            return (segs[..=k].join("."), Some(l), segs[k + 2..].join("."));
        }
    }
    (prefix.to_string(), None, String::new())
}

/// Every expert module of a checkpoint, in name order.
pub fn groups(ck: &Checkpoint, dims: Option<&MoeDims>) -> Vec<Group> {
    // Prefix → its tensors, in checkpoint order; consecutive tensors nearly
    // always share the prefix.
    let mut by_prefix: Vec<(&str, Vec<(&str, &TensorInfo)>)> = Vec::new();
    let mut index: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    let mut last: Option<usize> = None;
    for (_, t) in ck.tensors() {
        if let Some((prefix, rest)) = split_experts(&t.name) {
            let k = match last {
                Some(k) if by_prefix[k].0 == prefix => k,
                _ => *index.entry(prefix).or_insert_with(|| {
                    by_prefix.push((prefix, Vec::new()));
                    by_prefix.len() - 1
                }),
            };
            last = Some(k);
            by_prefix[k].1.push((rest, t));
        }
    }
    by_prefix.sort_unstable_by(|a, b| a.0.cmp(b.0));
    // Modules are independent: built in parallel, collected in order.
    let mut out: Vec<Group> = by_prefix.par_iter().map(|(p, ts)| build(p, ts, dims)).collect();
    out.sort_by(|a, b| (&a.stack, &a.module, a.layer, &a.prefix).cmp(&(&b.stack, &b.module, b.layer, &b.prefix)));
    out
}

fn build(prefix: &str, tensors: &[(&str, &TensorInfo)], dims: Option<&MoeDims>) -> Group {
    let (stack, layer, module) = stack_of(prefix);
    let mut g = Group {
        prefix: prefix.to_string(),
        stack,
        module,
        layer,
        family: Family::Unknown,
        experts: 0,
        per_expert: BTreeMap::new(),
        fused: BTreeMap::new(),
        dtypes: Vec::new(),
        quantised: Vec::new(),
        extra: Vec::new(),
        ambiguous: Vec::new(),
        problems: Vec::new(),
    };
    let sorted = sort_tensors(&mut g, tensors);
    g.per_expert =
        sorted.per_expert.iter().map(|(&p, m)| (p, m.iter().map(|(&j, t)| (j, t.name.clone())).collect())).collect();
    note_dtypes(&mut g);
    let dims = ConfigDims::of(dims);
    if !g.per_expert.is_empty() && !g.fused.is_empty() {
        g.problems.push(format!(
            "both per-expert keys and fused keys ({}) under one experts module",
            g.fused.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    } else if !g.per_expert.is_empty() {
        check_per_expert(&mut g, &sorted, &dims);
    } else {
        check_fused(&mut g, &sorted.shapes, &dims);
    }
    g
}

/// The tensors of one experts module, sorted by what their names say.
struct Sorted<'a> {
    /// Per-expert weights named `w1/w3/w2` (`Some(true)`) or
    /// `gate_proj/up_proj/down_proj` (`Some(false)`).
    mixtral: Option<bool>,
    /// The per-expert weights (as `Group::per_expert`).
    per_expert: BTreeMap<Proj, BTreeMap<u64, &'a TensorInfo>>,
    /// The fused tensors, by name.
    shapes: BTreeMap<&'a str, &'a TensorInfo>,
}

/// The dims `config.json` gives, when it does.
struct ConfigDims<'a> {
    hidden: Option<u64>,
    intermediate: Option<u64>,
    /// `2 * intermediate` (the fused gate/up width); `None` when it does
    /// not fit in 64 bits (`MoeDims::load` refuses such a config).
    two_intermediate: Option<u64>,
    experts: Option<u64>,
    model_type: Option<&'a str>,
}

impl ConfigDims<'_> {
    fn of(dims: Option<&MoeDims>) -> ConfigDims<'_> {
        let intermediate = dims.and_then(|d| d.intermediate);
        ConfigDims {
            hidden: dims.and_then(|d| d.hidden),
            intermediate,
            two_intermediate: intermediate.and_then(|i| i.checked_mul(2)),
            experts: dims.and_then(|d| d.experts),
            model_type: dims.and_then(|d| d.model_type.as_deref()),
        }
    }
}

/// Each tensor under `<P>.experts` as a per-expert weight, a fused tensor,
/// a quantisation sibling or something else (`g.dtypes`, `g.fused`,
/// `g.quantised`, `g.extra` filled on the way).
fn sort_tensors<'a>(g: &mut Group, tensors: &[(&str, &'a TensorInfo)]) -> Sorted<'a> {
    let mut sorted = Sorted { mixtral: None, per_expert: BTreeMap::new(), shapes: BTreeMap::new() };
    for &(rest, t) in tensors {
        let note_dtype = |g: &mut Group| {
            if !g.dtypes.contains(&t.dtype) {
                g.dtypes.push(t.dtype.clone());
            }
        };
        let parts = segments(rest);
        let per_expert_weight = match parts {
            Segments::Three(j, proj, suffix) => {
                j.parse::<u64>().ok().and_then(|j| per_expert_proj(proj).map(|p| (j, proj, p, suffix)))
            }
            _ => None,
        };
        match (parts, per_expert_weight) {
            (_, Some((j, proj, (p, mx), suffix))) => {
                if suffix == "weight" {
                    note_dtype(g);
                    if sorted.mixtral.is_some_and(|m| m != mx) {
                        g.problems.push(format!("both gate_proj/up_proj/down_proj and w1/w3/w2 names ({})", t.name));
                    }
                    sorted.mixtral = Some(mx);
                    sorted.per_expert.entry(p).or_default().insert(j, t);
                } else if QUANT_SUFFIXES.contains(&suffix) {
                    let s = format!("{proj}.{suffix}");
                    if !g.quantised.contains(&s) {
                        g.quantised.push(s);
                    }
                } else {
                    let s = format!("{proj}.{suffix}");
                    if !g.extra.contains(&s) {
                        g.extra.push(s);
                    }
                }
            }
            (Segments::One(name), None) => {
                let base = name.trim_end_matches("_bias");
                if matches!(name, "gate_up_proj" | "down_proj" | "gate_proj" | "up_proj")
                    || name.ends_with("_bias") && matches!(base, "gate_up_proj" | "down_proj")
                {
                    if !name.ends_with("_bias") {
                        note_dtype(g);
                    }
                    g.fused.insert(name.to_string(), t.name.clone());
                    sorted.shapes.insert(&t.name, t);
                } else if QUANT_SUFFIXES.iter().any(|q| name.ends_with(&format!("_{q}"))) {
                    if !g.quantised.contains(&name.to_string()) {
                        g.quantised.push(name.to_string());
                    }
                } else {
                    g.extra.push(name.to_string());
                }
            }
            _ => g.extra.push(rest.to_string()),
        }
    }
    sorted
}

/// Packed dtypes count as quantised; several dtypes are a problem.
fn note_dtypes(g: &mut Group) {
    for d in &g.dtypes {
        if is_packed(d) {
            let s = format!("dtype {d}");
            if !g.quantised.contains(&s) {
                g.quantised.push(s);
            }
        }
    }
    if g.dtypes.len() > 1 {
        g.problems.push(format!("mixed dtypes among expert weights: {}", g.dtypes.join(", ")));
    }
}

/// Families A and A': every expert has its three matrices, of the shapes
/// the config gives (or all alike), gate and down transposes.
fn check_per_expert(g: &mut Group, sorted: &Sorted<'_>, dims: &ConfigDims<'_>) {
    let (h, i, e_cfg) = (dims.hidden, dims.intermediate, dims.experts);
    g.family = if sorted.mixtral == Some(true) { Family::Mixtral } else { Family::PerExpert };
    let names = if g.family == Family::Mixtral { ["w1", "w3", "w2"] } else { ["gate_proj", "up_proj", "down_proj"] };
    let ids: std::collections::BTreeSet<u64> = g.per_expert.values().flat_map(|m| m.keys().copied()).collect();
    let found_max = ids.iter().next_back().map_or(0, |m| m + 1);
    let e = e_cfg.unwrap_or(found_max);
    g.experts = ids.len() as u64;
    if found_max > crate::config::MAX_COUNT {
        g.problems.push(format!(
            "expert ids up to {}: more than patchgen accepts ({})",
            found_max - 1,
            crate::config::MAX_COUNT
        ));
        return;
    }
    if let Some(e) = e_cfg
        && found_max > e
    {
        g.problems.push(format!("expert ids up to {} but the config has {e} experts", found_max - 1));
    }
    for (k, p) in [Proj::Gate, Proj::Up, Proj::Down].into_iter().enumerate() {
        let have = g.per_expert.get(&p);
        let missing: Vec<u64> = (0..e).filter(|j| !have.is_some_and(|m| m.contains_key(j))).collect();
        if !missing.is_empty() {
            g.problems.push(format!("{} missing for expert(s) {} of {e}", names[k], ranges(&missing)));
        }
    }
    // Shapes: gate/up [I,H], down [H,I].
    let mut seen: BTreeMap<Proj, &[u64]> = BTreeMap::new();
    for (p, m) in &sorted.per_expert {
        for (j, t) in m {
            let (name, s) = (&t.name, t.shape.as_slice());
            let want = match (p, h, i) {
                (Proj::Gate | Proj::Up, Some(h), Some(i)) => Some([i, h]),
                (Proj::Down, Some(h), Some(i)) => Some([h, i]),
                _ => None,
            };
            if let Some(w) = want {
                if s != w {
                    g.problems.push(format!(
                        "{name}: shape {s:?}, expected {w:?} from config.json (H={}, I={})",
                        h.unwrap(),
                        i.unwrap()
                    ));
                }
            } else if let Some(first) = seen.get(p) {
                if *first != s {
                    g.problems.push(format!("{name}: shape {s:?} differs from the other experts' {first:?}"));
                }
            } else {
                seen.insert(*p, s);
            }
            if s.len() != 2 {
                g.problems.push(format!("{name}: {}-D, expected a 2-D matrix (expert {j})", s.len()));
            }
        }
    }
    if let (Some(gs), Some(ds)) = (seen.get(&Proj::Gate), seen.get(&Proj::Down))
        && gs.len() == 2
        && ds.len() == 2
        && (gs[0] != ds[1] || gs[1] != ds[0])
    {
        g.problems.push(format!("gate {gs:?} and down {ds:?} are not transposes of each other"));
    }
}

/// Fused or stacked experts (families B, C, D, E): the experts count from
/// dim 0, then the family by keys, shapes and the config's dims.
fn check_fused(g: &mut Group, shapes: &BTreeMap<&str, &TensorInfo>, dims: &ConfigDims<'_>) {
    let shape = |name: &str| shapes.get(name).map(|t| t.shape.clone()).unwrap_or_default();
    let gu = g.fused.get("gate_up_proj").map(|n| shape(n));
    let gp = g.fused.get("gate_proj").map(|n| shape(n));
    let dn = g.fused.get("down_proj").map(|n| shape(n));
    let has_bias = g.fused.contains_key("gate_up_proj_bias") || g.fused.contains_key("down_proj_bias");
    let bias = g.fused.get("gate_up_proj_bias").map(|n| shape(n));
    let e = gu.as_ref().or(gp.as_ref()).or(dn.as_ref()).or(bias.as_ref()).and_then(|s| s.first().copied()).unwrap_or(0);
    g.experts = e;
    if e > crate::config::MAX_COUNT {
        g.problems.push(format!("{e} experts in dim 0: more than patchgen accepts ({})", crate::config::MAX_COUNT));
        return;
    }
    if let Some(ec) = dims.experts
        && e != ec
    {
        g.problems.push(format!("{e} experts in dim 0, but config.json has {ec}"));
    }
    for (name, s) in [("gate_up_proj", &gu), ("gate_proj", &gp), ("down_proj", &dn)] {
        if let Some(s) = s
            && s.len() != 3
        {
            g.problems.push(format!("{name}: shape {s:?} is not 3-D [E, _, _]"));
            return;
        }
    }
    if gp.is_some() || g.fused.contains_key("up_proj") {
        let up = g.fused.get("up_proj").map(|n| shape(n));
        check_legacy_stacked(g, (&gp, &up, &dn), dims);
        return;
    }
    if gu.is_none() && g.quantised.iter().any(|q| q.starts_with("gate_up_proj_")) {
        // MXFP4 and the like: the packed blocks stand for the weights.
        g.family = if has_bias { Family::GptOss } else { Family::Unknown };
        g.experts = e;
        return;
    }
    let (Some(gu), Some(dn)) = (gu, dn) else {
        g.problems.push(format!(
            "fused experts need gate_up_proj and down_proj; found only {}",
            g.fused.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
        return;
    };
    if has_bias || dims.model_type == Some("gpt_oss") {
        check_gpt_oss(g, &gu, &dn, dims);
        return;
    }
    decide_fused_orientation(g, &gu, &dn, dims);
}

/// A tensor's shape, when the checkpoint has the tensor.
type MaybeShape = Option<Vec<u64>>;

/// Family D: `gate_proj`, `up_proj` `[E,I,H]`, `down_proj` `[E,H,I]`.
fn check_legacy_stacked(g: &mut Group, (gp, up, dn): (&MaybeShape, &MaybeShape, &MaybeShape), dims: &ConfigDims<'_>) {
    g.family = Family::LegacyStacked;
    match (gp, up, dn) {
        (Some(a), Some(b), Some(d)) => {
            if a != b {
                g.problems.push(format!("gate_proj {a:?} and up_proj {b:?} differ"));
            }
            if let (Some(h), Some(i)) = (dims.hidden, dims.intermediate) {
                if a[1..] != [i, h] {
                    g.problems.push(format!("gate_proj {a:?}, expected [E, {i}, {h}]"));
                }
                if d[1..] != [h, i] {
                    g.problems.push(format!("down_proj {d:?}, expected [E, {h}, {i}]"));
                }
            }
        }
        _ => g.problems.push("legacy stacked experts need gate_proj, up_proj and down_proj".into()),
    }
}

/// Family E: gpt_oss's `[E,H,2I]` (interleaved) and `[E,I,H]`.
fn check_gpt_oss(g: &mut Group, gu: &[u64], dn: &[u64], dims: &ConfigDims<'_>) {
    g.family = Family::GptOss;
    if let (Some(h), Some(i), Some(two_i)) = (dims.hidden, dims.intermediate, dims.two_intermediate) {
        if gu[1..] != [h, two_i] {
            g.problems.push(format!("gate_up_proj {gu:?}, expected [E, {h}, {two_i}] (gpt_oss)"));
        }
        if dn[1..] != [i, h] {
            g.problems.push(format!("down_proj {dn:?}, expected [E, {i}, {h}] (gpt_oss)"));
        }
    }
}

/// B or C: `[E,H,2I]` + `[E,I,H]` or `[E,2I,H]` + `[E,H,I]`, by the
/// config's dims (else each shape by the other); both when the shapes are
/// square, and then ambiguous, never guessed.
fn decide_fused_orientation(g: &mut Group, gu: &[u64], dn: &[u64], dims: &ConfigDims<'_>) {
    let config = match (dims.hidden, dims.intermediate, dims.two_intermediate) {
        (Some(h), Some(i), Some(two_i)) => Some((h, i, two_i)),
        _ => None,
    };
    let (gu_c, gu_b, dn_c, dn_b) = match config {
        Some((h, i, two_i)) => (gu[1..] == [two_i, h], gu[1..] == [h, two_i], dn[1..] == [h, i], dn[1..] == [i, h]),
        // Without config dims: each must agree with the other.
        None => {
            let twice = |d: u64| d.checked_mul(2);
            let c = twice(dn[2]) == Some(gu[1]) && gu[2] == dn[1];
            let b = twice(dn[1]) == Some(gu[2]) && gu[1] == dn[2];
            (c, b, c, b)
        }
    };
    if gu_c && gu_b {
        g.ambiguous.push(format!(
            "gate_up_proj {gu:?}: hidden_size == 2 * intermediate, [E,2I,H] and [E,H,2I] are the same shape"
        ));
    }
    if dn_c && dn_b {
        g.ambiguous
            .push(format!("down_proj {dn:?}: hidden_size == intermediate, [E,H,I] and [E,I,H] are the same shape"));
    }
    g.family = match (gu_c && dn_c, gu_b && dn_b) {
        (true, true) => Family::FusedUndecided,
        (true, false) => Family::Fused,
        (false, true) => Family::FusedTransposed,
        (false, false) => {
            let want = match config {
                Some((h, i, two_i)) => {
                    format!(" (config: v5 [E,{two_i},{h}] + [E,{h},{i}] or transposed [E,{h},{two_i}] + [E,{i},{h}])")
                }
                None => String::new(),
            };
            g.problems.push(format!("gate_up_proj {gu:?} and down_proj {dn:?} fit neither layout{want}"));
            Family::Unknown
        }
    };
}

/// `0-3, 7, 9-10`.
pub fn ranges(ids: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_routed_experts_only() {
        assert_eq!(
            split_experts("model.layers.3.mlp.experts.7.gate_proj.weight"),
            Some(("model.layers.3.mlp", "7.gate_proj.weight"))
        );
        assert_eq!(split_experts("model.layers.3.mlp.shared_experts.gate_proj.weight"), None);
        assert_eq!(stack_of("thinker.model.layers.12.mlp"), ("thinker.model.layers".into(), Some(12), "mlp".into()));
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
    }

    fn info(name: &str, dtype: &str, shape: &[u64]) -> TensorInfo {
        TensorInfo { name: name.into(), dtype: dtype.into(), shape: shape.to_vec(), begin: 0, end: 0 }
    }

    #[test]
    fn mxfp4_gpt_oss_is_family_e_and_quantised() {
        let p = "model.layers.0.mlp.experts.";
        let ts = [
            info(&format!("{p}gate_up_proj_blocks"), "U8", &[4, 12, 1, 16]),
            info(&format!("{p}gate_up_proj_scales"), "U8", &[4, 12, 1]),
            info(&format!("{p}gate_up_proj_bias"), "BF16", &[4, 12]),
            info(&format!("{p}down_proj_blocks"), "U8", &[4, 8, 1, 16]),
            info(&format!("{p}down_proj_scales"), "U8", &[4, 8, 1]),
            info(&format!("{p}down_proj_bias"), "BF16", &[4, 8]),
        ];
        let refs: Vec<(&str, &TensorInfo)> = ts.iter().map(|t| (split_experts(&t.name).unwrap().1, t)).collect();
        let g = build("model.layers.0.mlp", &refs, None);
        assert_eq!(g.family, Family::GptOss);
        assert_eq!(g.experts, 4);
        assert!(g.problems.is_empty(), "{:?}", g.problems);
        assert_eq!(g.quantised, ["gate_up_proj_blocks", "gate_up_proj_scales", "down_proj_blocks", "down_proj_scales"]);
    }
}
