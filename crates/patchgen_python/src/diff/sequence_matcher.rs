//! A port of CPython 3.11's `difflib.SequenceMatcher` with `isjunk=None`.
//!
//! The algorithm is CPython's, step for step: the same `b2j` index (positions
//! of each element of `b`, ascending), the same "popular element" autojunk
//! heuristic (for `len(b) >= 200`, elements occurring more than
//! `len(b) // 100 + 1` times are dropped from `b2j`, but *not* added to
//! `bjunk`), the same strict `k > bestsize` tie-breaking in
//! `find_longest_match`, the same extension of the best match over equal
//! (including popular) neighbours, and the same work queue, sort and merge in
//! `get_matching_blocks`. With `isjunk=None` the set `bjunk` is always empty,
//! so the two "junk" extension loops of `find_longest_match` never run and are
//! omitted.
//!
//! Elements are interned to `u32` ids up front (elements of `a` that never
//! occur in `b` all share one id that no element of `b` has), and the `j2len`
//! dictionaries of `find_longest_match` become two dense arrays that are
//! cleared through the list of entries each row touched. Neither changes a
//! result: only equality of elements is ever observed, and the dense arrays
//! read exactly the values the dictionaries would have held.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// Id given to elements of `a` that do not occur in `b` at all.
const ABSENT: u32 = u32::MAX;

/// `difflib.Match`: `a[a..a + size] == b[b..b + size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    pub a: usize,
    pub b: usize,
    pub size: usize,
}

/// The tag of an opcode, as `get_opcodes` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    Replace,
    Delete,
    Insert,
    Equal,
}

impl Tag {
    /// The tag's name in CPython (`'replace'`, `'delete'`, `'insert'`, `'equal'`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Replace => "replace",
            Tag::Delete => "delete",
            Tag::Insert => "insert",
            Tag::Equal => "equal",
        }
    }
}

/// One `(tag, i1, i2, j1, j2)` tuple of `get_opcodes`: `a[i1..i2]` becomes `b[j1..j2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode {
    pub tag: Tag,
    pub i1: usize,
    pub i2: usize,
    pub j1: usize,
    pub j2: usize,
}

impl Opcode {
    fn new(tag: Tag, i1: usize, i2: usize, j1: usize, j2: usize) -> Self {
        Opcode { tag, i1, i2, j1, j2 }
    }
}

/// `difflib.SequenceMatcher(None, a, b, autojunk=...)` over interned elements.
#[derive(Debug, Clone)]
pub struct SequenceMatcher {
    /// Ids of the elements of `a` (`ABSENT` for those not in `b`).
    a: Vec<u32>,
    /// Ids of the elements of `b`, `0..num_ids`.
    b: Vec<u32>,
    /// `b2j` in compressed form: the positions of id `x` in `b`, ascending,
    /// are `b2j_pos[b2j_start[x]..b2j_start[x + 1]]`; empty for popular ids.
    b2j_start: Vec<u32>,
    b2j_pos: Vec<u32>,
    /// `bpopular`, by id.
    popular: Vec<bool>,
}

/// Reusable buffers for `find_longest_match`: `j2len[j + 1]` is the length
/// of the match ending at `a[i - 1]`, `b[j]` (0 when absent, like `j2len.get(j, 0)`).
struct Scratch {
    j2len: Vec<u32>,
    newj2len: Vec<u32>,
    touched: Vec<u32>,
    newtouched: Vec<u32>,
}

impl Scratch {
    fn new(lb: usize) -> Self {
        Scratch { j2len: vec![0; lb + 1], newj2len: vec![0; lb + 1], touched: Vec::new(), newtouched: Vec::new() }
    }
}

impl SequenceMatcher {
    /// `SequenceMatcher(None, a, b)` (autojunk on, as `unified_diff` uses it).
    pub fn new<T: Hash + Eq>(a: &[T], b: &[T]) -> Self {
        Self::with_autojunk(a, b, true)
    }

    /// `SequenceMatcher(None, a, b, autojunk=autojunk)`.
    pub fn with_autojunk<T: Hash + Eq>(a: &[T], b: &[T], autojunk: bool) -> Self {
        assert!(a.len() < u32::MAX as usize && b.len() < u32::MAX as usize, "sequences too long");
        let mut ids: HashMap<&T, u32, BuildHasherDefault<FxHasher>> =
            HashMap::with_capacity_and_hasher(b.len(), Default::default());
        let mut counts: Vec<u32> = Vec::new();
        let b_ids: Vec<u32> = b
            .iter()
            .map(|elt| {
                let next = counts.len() as u32;
                let id = *ids.entry(elt).or_insert(next);
                if id == next {
                    counts.push(0);
                }
                counts[id as usize] += 1;
                id
            })
            .collect();
        let a_ids: Vec<u32> = a.iter().map(|elt| ids.get(elt).copied().unwrap_or(ABSENT)).collect();

        // __chain_b: popular elements (only with autojunk and len(b) >= 200).
        let n = b.len();
        let popular: Vec<bool> = if autojunk && n >= 200 {
            let ntest = (n / 100 + 1) as u32;
            counts.iter().map(|&c| c > ntest).collect()
        } else {
            vec![false; counts.len()]
        };

        // b2j without the popular elements, positions ascending.
        let mut b2j_start = Vec::with_capacity(counts.len() + 1);
        let mut total = 0u32;
        for (id, &c) in counts.iter().enumerate() {
            b2j_start.push(total);
            if !popular[id] {
                total += c;
            }
        }
        b2j_start.push(total);
        let mut fill: Vec<u32> = b2j_start[..counts.len()].to_vec();
        let mut b2j_pos = vec![0u32; total as usize];
        for (j, &id) in b_ids.iter().enumerate() {
            if !popular[id as usize] {
                b2j_pos[fill[id as usize] as usize] = j as u32;
                fill[id as usize] += 1;
            }
        }

        SequenceMatcher { a: a_ids, b: b_ids, b2j_start, b2j_pos, popular }
    }

    /// Number of elements of `b` that the autojunk heuristic dropped from
    /// `b2j` (`len(bpopular)`): distinct popular elements.
    pub fn popular_count(&self) -> usize {
        self.popular.iter().filter(|&&p| p).count()
    }

    fn b2j(&self, id: u32) -> &[u32] {
        if id == ABSENT {
            return &[];
        }
        let id = id as usize;
        &self.b2j_pos[self.b2j_start[id] as usize..self.b2j_start[id + 1] as usize]
    }

    /// `find_longest_match(alo, ahi, blo, bhi)`.
    pub fn find_longest_match(&self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Match {
        assert!(alo <= ahi && ahi <= self.a.len() && blo <= bhi && bhi <= self.b.len());
        self.find_longest_match_in(&mut Scratch::new(self.b.len()), alo, ahi, blo, bhi)
    }

    fn find_longest_match_in(&self, s: &mut Scratch, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Match {
        let (a, b) = (&self.a, &self.b);
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        // Indexes as difflib's loop does (`i` is the match position too).
        #[allow(clippy::needless_range_loop)]
        for i in alo..ahi {
            let js = self.b2j(a[i]);
            // `if j < blo: continue` — skipping them all at once changes nothing.
            let from = js.partition_point(|&j| (j as usize) < blo);
            for &j in &js[from..] {
                let j = j as usize;
                if j >= bhi {
                    break;
                }
                // newj2len[j] = j2len.get(j - 1, 0) + 1
                let k = s.j2len[j] + 1;
                s.newj2len[j + 1] = k;
                s.newtouched.push(j as u32);
                let k = k as usize;
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
            // j2len = newj2len: clear the old row, then swap.
            for &j in &s.touched {
                s.j2len[j as usize + 1] = 0;
            }
            s.touched.clear();
            std::mem::swap(&mut s.j2len, &mut s.newj2len);
            std::mem::swap(&mut s.touched, &mut s.newtouched);
        }
        for &j in &s.touched {
            s.j2len[j as usize + 1] = 0;
        }
        s.touched.clear();

        // Extend over equal non-junk neighbours (popular elements are not
        // junk). `bjunk` is empty, so CPython's junk-extension loops are no-ops.
        while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] == b[bestj + bestsize] {
            bestsize += 1;
        }
        Match { a: besti, b: bestj, size: bestsize }
    }

    /// `get_matching_blocks()`: maximal non-adjacent matches, ascending, with
    /// the `(len(a), len(b), 0)` sentinel last.
    pub fn get_matching_blocks(&self) -> Vec<Match> {
        let (la, lb) = (self.a.len(), self.b.len());
        let mut scratch = Scratch::new(lb);
        let mut queue = vec![(0, la, 0, lb)];
        let mut blocks: Vec<Match> = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let x = self.find_longest_match_in(&mut scratch, alo, ahi, blo, bhi);
            let (i, j, k) = (x.a, x.b, x.size);
            if k > 0 {
                blocks.push(x);
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort();

        let (mut i1, mut j1, mut k1) = (0, 0, 0);
        let mut non_adjacent = Vec::with_capacity(blocks.len() + 1);
        for m in blocks {
            if i1 + k1 == m.a && j1 + k1 == m.b {
                k1 += m.size;
            } else {
                if k1 > 0 {
                    non_adjacent.push(Match { a: i1, b: j1, size: k1 });
                }
                (i1, j1, k1) = (m.a, m.b, m.size);
            }
        }
        if k1 > 0 {
            non_adjacent.push(Match { a: i1, b: j1, size: k1 });
        }
        non_adjacent.push(Match { a: la, b: lb, size: 0 });
        non_adjacent
    }

    /// `get_opcodes()`.
    pub fn get_opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut answer = Vec::new();
        for m in self.get_matching_blocks() {
            let (ai, bj, size) = (m.a, m.b, m.size);
            let tag = if i < ai && j < bj {
                Some(Tag::Replace)
            } else if i < ai {
                Some(Tag::Delete)
            } else if j < bj {
                Some(Tag::Insert)
            } else {
                None
            };
            if let Some(tag) = tag {
                answer.push(Opcode::new(tag, i, ai, j, bj));
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                answer.push(Opcode::new(Tag::Equal, ai, i, bj, j));
            }
        }
        answer
    }

    /// `list(get_grouped_opcodes(n))`: hunks with up to `n` lines of context.
    pub fn get_grouped_opcodes(&self, n: usize) -> Vec<Vec<Opcode>> {
        let mut codes = self.get_opcodes();
        if codes.is_empty() {
            codes.push(Opcode::new(Tag::Equal, 0, 1, 0, 1));
        }
        if codes[0].tag == Tag::Equal {
            let c = &mut codes[0];
            // (tag, max(i1, i2-n), i2, max(j1, j2-n), j2)
            c.i1 = c.i1.max(c.i2.saturating_sub(n));
            c.j1 = c.j1.max(c.j2.saturating_sub(n));
        }
        if let Some(c) = codes.last_mut()
            && c.tag == Tag::Equal
        {
            // (tag, i1, min(i2, i1+n), j1, min(j2, j1+n))
            c.i2 = c.i2.min(c.i1.saturating_add(n));
            c.j2 = c.j2.min(c.j1.saturating_add(n));
        }

        let nn = n.saturating_add(n);
        let mut groups = Vec::new();
        let mut group = Vec::new();
        for c in codes {
            let Opcode { tag, mut i1, i2, mut j1, j2 } = c;
            if tag == Tag::Equal && i2 - i1 > nn {
                group.push(Opcode::new(tag, i1, i2.min(i1.saturating_add(n)), j1, j2.min(j1.saturating_add(n))));
                groups.push(std::mem::take(&mut group));
                i1 = i1.max(i2.saturating_sub(n));
                j1 = j1.max(j2.saturating_sub(n));
            }
            group.push(Opcode::new(tag, i1, i2, j1, j2));
        }
        if !(group.is_empty() || group.len() == 1 && group[0].tag == Tag::Equal) {
            groups.push(group);
        }
        groups
    }
}

/// The Fx hash (as in rustc): fast, and good enough for interning lines.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl FxHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
