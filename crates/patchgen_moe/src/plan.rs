//! The conversion plan, from headers alone: every output tensor with its
//! dtype, shape and the byte pieces of the input it is made of, in input
//! order, then cut into shards.
//!
//! Row-major `[E,2I,H]` is, per expert e, the bytes of `gate_e` then
//! `up_e`; `[E,H,I]` is `down_0 .. down_{E-1}` back to back. So per-expert
//! (A/A') and legacy stacked (D) ↔ fused (C) are byte ranges only
//! ([`Piece::Range`]); the transposed family (B) needs one expert matrix in
//! memory at a time ([`Piece::Matrix`]). Every other tensor is one range.
//! Refused (an `Err` naming the module): quantised experts, incomplete or
//! mismatched modules, gpt_oss's native layout, and fused tensors whose
//! layout cannot be told by shape unless `--source-layout` says.

use std::collections::HashSet;

use serde::Serialize;

use super::checkpoint::Checkpoint;
use super::layout::{Family, Group, Proj};

/// Which way to convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Target {
    /// v5 fused: `gate_up_proj [E,2I,H]` (gate rows first), `down_proj [E,H,I]`.
    Fused,
    /// `experts.{j}.gate_proj/up_proj/down_proj.weight` (what HF exports).
    PerExpert,
}

/// What fused tensors whose shape fits both layouts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SourceLayout {
    /// `[E,2I,H]` / `[E,H,I]` (family C).
    Fused,
    /// `[E,H,2I]` / `[E,I,H]` (family B).
    Transposed,
}

/// Bytes of one input shard that make up part of an output tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// `len` bytes at absolute file offset `offset` of input shard `shard`.
    Range { shard: usize, offset: u64, len: u64 },
    /// A `rows × cols` matrix of `elem`-byte elements at `offset`; the
    /// output gets the transpose of its columns `col_start .. col_start +
    /// col_count` (`col_count × rows`).
    Matrix { shard: usize, offset: u64, rows: u64, cols: u64, elem: u64, col_start: u64, col_count: u64 },
}

impl Piece {
    pub fn len(&self) -> u64 {
        match self {
            Piece::Range { len, .. } => *len,
            Piece::Matrix { rows, col_count, elem, .. } => rows * col_count * elem,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug)]
pub struct OutTensor {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub pieces: Vec<Piece>,
}

impl OutTensor {
    pub fn len(&self) -> u64 {
        self.pieces.iter().map(Piece::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug)]
pub struct Plan {
    pub tensors: Vec<OutTensor>,
    /// Expert modules converted (`<P>` → from family).
    pub converted: Vec<(String, Family)>,
    /// Expert modules already in the target layout.
    pub unchanged: Vec<String>,
}

/// Plan the conversion of `ck` whose expert modules are `groups`.
pub fn plan(
    ck: &Checkpoint,
    groups: &[Group],
    to: Target,
    source: Option<SourceLayout>,
) -> Result<Plan, crate::error::MoeError> {
    plan_strict(ck, groups, to, source).map_err(crate::error::MoeError::Plan)
}

fn plan_strict(ck: &Checkpoint, groups: &[Group], to: Target, source: Option<SourceLayout>) -> Result<Plan, String> {
    let mut converted = Vec::new();
    let mut unchanged = Vec::new();
    // name of a group's first tensor (in input order) → its outputs
    let mut outputs: std::collections::HashMap<String, Vec<OutTensor>> = std::collections::HashMap::new();
    let mut consumed: HashSet<String> = HashSet::new();
    for g in groups {
        let here = |m: String| format!("{}.experts: {m}", g.prefix);
        if !g.quantised.is_empty() {
            return Err(here(format!(
                "quantised experts ({}): dequantising is out of scope; convert the dequantised checkpoint",
                g.quantised.join(", ")
            )));
        }
        if let Some(p) = g.problems.first() {
            return Err(here(format!("{p}\n  help: run `patchgen moe inspect` on the checkpoint for every problem")));
        }
        if !g.extra.is_empty() {
            return Err(here(format!("unexpected tensors under experts ({}): not converted", g.extra.join(", "))));
        }
        let family = match (g.family, source) {
            (Family::GptOss, _) => {
                return Err(here("gpt_oss native layout (interleaved gate/up with biases): its model loads it as it is; not converted".into()));
            }
            (Family::Unknown, _) => return Err(here("unrecognised expert keys".into())),
            (Family::FusedUndecided, None) => {
                return Err(here(format!(
                    "{}\n  help: pass --source-layout fused|transposed (check the model's source), the layout cannot be told by shape",
                    g.ambiguous.join("; ")
                )));
            }
            (Family::Fused | Family::FusedTransposed, None) if !g.ambiguous.is_empty() => {
                return Err(here(format!(
                    "{}\n  help: pass --source-layout fused|transposed: one tensor's layout cannot be told by its own shape",
                    g.ambiguous.join("; ")
                )));
            }
            (Family::Fused | Family::FusedTransposed | Family::FusedUndecided, Some(s)) => {
                let f = if s == SourceLayout::Fused { Family::Fused } else { Family::FusedTransposed };
                if g.family != Family::FusedUndecided && g.family != f {
                    return Err(here(format!(
                        "--source-layout {s:?} contradicts the shapes, which say {}",
                        g.family.describe()
                    )));
                }
                f
            }
            (f, _) => f,
        };
        let target_family = match to {
            Target::Fused => Family::Fused,
            Target::PerExpert => Family::PerExpert,
        };
        if family == target_family || (to == Target::PerExpert && family == Family::Mixtral) {
            unchanged.push(g.prefix.clone());
            continue;
        }
        let outs = convert_group(ck, g, family, to).map_err(here)?;
        let mut names: Vec<&String> = g.per_expert.values().flat_map(|m| m.values()).chain(g.fused.values()).collect();
        names.sort_by_key(|n| ck.position(n));
        let first = names[0].clone();
        for n in names {
            consumed.insert(n.clone());
        }
        outputs.insert(first, outs);
        converted.push((g.prefix.clone(), family));
    }
    let mut tensors = Vec::with_capacity(ck.tensor_count());
    for (shard, t) in ck.tensors() {
        if let Some(outs) = outputs.remove(&t.name) {
            tensors.extend(outs);
        } else if !consumed.contains(&t.name) {
            tensors.push(OutTensor {
                name: t.name.clone(),
                dtype: t.dtype.clone(),
                shape: t.shape.clone(),
                pieces: vec![Piece::Range { shard, offset: ck.shards[shard].data_start() + t.begin, len: t.len() }],
            });
        }
    }
    Ok(Plan { tensors, converted, unchanged })
}

/// (shard, absolute offset, shape, dtype, elem size) of a tensor.
fn at(ck: &Checkpoint, name: &str) -> Result<(usize, u64, Vec<u64>, String, u64), String> {
    let (s, t) = ck.tensor(name).ok_or_else(|| format!("{name}: not in the checkpoint"))?;
    let elem = t.elem_size().ok_or_else(|| format!("{name}: dtype {} has no whole-byte element size", t.dtype))?;
    Ok((s, ck.shards[s].data_start() + t.begin, t.shape.clone(), t.dtype.clone(), elem))
}

fn convert_group(ck: &Checkpoint, g: &Group, family: Family, to: Target) -> Result<Vec<OutTensor>, String> {
    match (family, to) {
        (Family::PerExpert | Family::Mixtral, Target::Fused) => stack_per_expert(ck, g),
        (Family::LegacyStacked, Target::Fused) => interleave_stacked(ck, g),
        (Family::FusedTransposed, Target::Fused) => transpose_fused(ck, g),
        (Family::Fused | Family::FusedTransposed | Family::LegacyStacked, Target::PerExpert) => {
            split_fused(ck, g, family)
        }
        (f, t) => Err(format!("no conversion from {} to {t:?}", f.describe())),
    }
}

/// The fused tensor `experts.<k>` of a group.
fn fused<'g>(g: &'g Group, k: &str) -> Result<&'g String, String> {
    g.fused.get(k).ok_or_else(|| format!("no experts.{k}"))
}

/// A/A' → C: each expert's gate then up rows back to back, downs back to back.
fn stack_per_expert(ck: &Checkpoint, g: &Group) -> Result<Vec<OutTensor>, String> {
    let p = &g.prefix;
    let e = g.experts;
    let get = |proj: Proj, j: u64| {
        g.per_expert.get(&proj).and_then(|m| m.get(&j)).ok_or_else(|| format!("expert {j}: missing {proj:?}"))
    };
    let (_, _, gshape, dtype, _) = at(ck, get(Proj::Gate, 0)?)?;
    let (_, _, dshape, _, _) = at(ck, get(Proj::Down, 0)?)?;
    let mut gate_up = Vec::with_capacity(2 * e as usize);
    let mut down = Vec::with_capacity(e as usize);
    for j in 0..e {
        for proj in [Proj::Gate, Proj::Up] {
            let (shard, offset, _, _, _) = at(ck, get(proj, j)?)?;
            let len = ck.tensor(get(proj, j)?).unwrap().1.len();
            gate_up.push(Piece::Range { shard, offset, len });
        }
        let (shard, offset, _, _, _) = at(ck, get(Proj::Down, j)?)?;
        down.push(Piece::Range { shard, offset, len: ck.tensor(get(Proj::Down, j)?).unwrap().1.len() });
    }
    Ok(vec![
        OutTensor {
            name: format!("{p}.experts.gate_up_proj"),
            dtype: dtype.clone(),
            shape: vec![e, 2 * gshape[0], gshape[1]],
            pieces: gate_up,
        },
        OutTensor { name: format!("{p}.experts.down_proj"), dtype, shape: vec![e, dshape[0], dshape[1]], pieces: down },
    ])
}

/// D → C: the stacked gate and up interleaved expert by expert; down as it is.
fn interleave_stacked(ck: &Checkpoint, g: &Group) -> Result<Vec<OutTensor>, String> {
    let p = &g.prefix;
    let e = g.experts;
    let (gs, go, gshape, dtype, elem) = at(ck, fused(g, "gate_proj")?)?;
    let (us, uo, _, _, _) = at(ck, fused(g, "up_proj")?)?;
    let per = gshape[1] * gshape[2] * elem;
    let mut pieces = Vec::new();
    for j in 0..e {
        pieces.push(Piece::Range { shard: gs, offset: go + j * per, len: per });
        pieces.push(Piece::Range { shard: us, offset: uo + j * per, len: per });
    }
    let (ds, dof, dshape, _, delem) = at(ck, fused(g, "down_proj")?)?;
    let dlen = dshape.iter().product::<u64>() * delem;
    Ok(vec![
        OutTensor {
            name: format!("{p}.experts.gate_up_proj"),
            dtype: dtype.clone(),
            shape: vec![e, 2 * gshape[1], gshape[2]],
            pieces,
        },
        OutTensor {
            name: format!("{p}.experts.down_proj"),
            dtype,
            shape: dshape,
            pieces: vec![Piece::Range { shard: ds, offset: dof, len: dlen }],
        },
    ])
}

/// B → C: every expert's matrices transposed.
fn transpose_fused(ck: &Checkpoint, g: &Group) -> Result<Vec<OutTensor>, String> {
    let p = &g.prefix;
    let e = g.experts;
    // gate_up [E,H,2I] → [E,2I,H]; down [E,I,H] → [E,H,I].
    let (gs, go, gshape, dtype, elem) = at(ck, fused(g, "gate_up_proj")?)?;
    let (ds, dof, dshape, _, _) = at(ck, fused(g, "down_proj")?)?;
    let matrices = |shard: usize, off: u64, rows: u64, cols: u64| -> Vec<Piece> {
        (0..e)
            .map(|j| Piece::Matrix {
                shard,
                offset: off + j * rows * cols * elem,
                rows,
                cols,
                elem,
                col_start: 0,
                col_count: cols,
            })
            .collect()
    };
    Ok(vec![
        OutTensor {
            name: format!("{p}.experts.gate_up_proj"),
            dtype: dtype.clone(),
            shape: vec![e, gshape[2], gshape[1]],
            pieces: matrices(gs, go, gshape[1], gshape[2]),
        },
        OutTensor {
            name: format!("{p}.experts.down_proj"),
            dtype,
            shape: vec![e, dshape[2], dshape[1]],
            pieces: matrices(ds, dof, dshape[1], dshape[2]),
        },
    ])
}

/// C, B or D → A: each expert's three matrices cut out (B's transposed back).
fn split_fused(ck: &Checkpoint, g: &Group, family: Family) -> Result<Vec<OutTensor>, String> {
    let p = &g.prefix;
    let e = g.experts;
    let mut out = Vec::with_capacity(3 * e as usize);
    let names = ["gate_proj", "up_proj", "down_proj"];
    let gate_up = family != Family::LegacyStacked;
    let (gs, go, gshape, dtype, elem) = at(ck, fused(g, if gate_up { "gate_up_proj" } else { "gate_proj" })?)?;
    let up = if gate_up { None } else { Some(at(ck, fused(g, "up_proj")?)?) };
    let (ds, dof, dshape, _, _) = at(ck, fused(g, "down_proj")?)?;
    for j in 0..e {
        let mut push = |k: usize, shape: Vec<u64>, piece: Piece| {
            out.push(OutTensor {
                name: format!("{p}.experts.{j}.{}.weight", names[k]),
                dtype: dtype.clone(),
                shape,
                pieces: vec![piece],
            })
        };
        match family {
            Family::Fused => {
                // [E,2I,H]: gate rows then up rows; [E,H,I].
                let (two_i, h) = (gshape[1], gshape[2]);
                let i = two_i / 2;
                let block = two_i * h * elem;
                let half = i * h * elem;
                push(0, vec![i, h], Piece::Range { shard: gs, offset: go + j * block, len: half });
                push(1, vec![i, h], Piece::Range { shard: gs, offset: go + j * block + half, len: half });
                let dl = dshape[1] * dshape[2] * elem;
                push(2, vec![dshape[1], dshape[2]], Piece::Range { shard: ds, offset: dof + j * dl, len: dl });
            }
            Family::FusedTransposed => {
                // [E,H,2I]: gate = columns 0..I, transposed; [E,I,H] → [H,I].
                let (h, two_i) = (gshape[1], gshape[2]);
                let i = two_i / 2;
                let off = go + j * h * two_i * elem;
                let m = |c0| Piece::Matrix {
                    shard: gs,
                    offset: off,
                    rows: h,
                    cols: two_i,
                    elem,
                    col_start: c0,
                    col_count: i,
                };
                push(0, vec![i, h], m(0));
                push(1, vec![i, h], m(i));
                let (ri, ch) = (dshape[1], dshape[2]);
                push(
                    2,
                    vec![ch, ri],
                    Piece::Matrix {
                        shard: ds,
                        offset: dof + j * ri * ch * elem,
                        rows: ri,
                        cols: ch,
                        elem,
                        col_start: 0,
                        col_count: ch,
                    },
                );
            }
            _ => {
                let (us, uo, _, _, _) = up.clone().unwrap();
                let per = gshape[1] * gshape[2] * elem;
                push(0, vec![gshape[1], gshape[2]], Piece::Range { shard: gs, offset: go + j * per, len: per });
                push(1, vec![gshape[1], gshape[2]], Piece::Range { shard: us, offset: uo + j * per, len: per });
                let dl = dshape[1] * dshape[2] * elem;
                push(2, vec![dshape[1], dshape[2]], Piece::Range { shard: ds, offset: dof + j * dl, len: dl });
            }
        }
    }
    Ok(out)
}

/// Output shards: greedy by size in plan order (a new shard when the next
/// tensor would pass `limit` and the current one is not empty).
pub fn shards(tensors: &[OutTensor], limit: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut size) = (0, 0u64);
    for (i, t) in tensors.iter().enumerate() {
        let len = t.len();
        if i > start && size + len > limit {
            out.push(start..i);
            start = i;
            size = 0;
        }
        size += len;
    }
    if start < tensors.len() || out.is_empty() {
        out.push(start..tensors.len());
    }
    out
}
