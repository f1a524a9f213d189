//! The fuzz targets' properties on the stable toolchain (cargo-fuzz needs
//! nightly flags, so CI runs these instead): every seed committed under
//! `fuzz/seeds/<target>/`, a bounded proptest run of random and mutated
//! inputs, and a fuzz loop that runs each entry point for a fixed time
//! (`PATCHGEN_FUZZ_SECONDS`, 3 s by default) — the server's framing,
//! checkpoint index files, remote addresses, safetensors headers and the
//! config evaluator (whose realistic-fragment properties are in
//! `no_panic.rs`).
//! Same properties as `fuzz/fuzz_targets/*.rs`: no panic, progress, and
//! what is accepted is safe to use.

use std::path::{Path, PathBuf};

use patchgen_moe::checkpoint::read_index;
use patchgen_moe::header::parse_header;
use patchgen_moe::remote::url::{Place, RemoteUrl};
use patchgen_server::transport::{Framed, read_message};
use proptest::prelude::*;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds").join(target);
    let mut out: Vec<Vec<u8>> =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| std::fs::read(e.path()).unwrap()).collect();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out.sort();
    out
}

fn server_frames(data: &[u8]) {
    let mut input = Framed::new(std::io::BufReader::new(data));
    for _ in 0..=data.len() {
        match read_message(&mut input) {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
    panic!("read_message made no progress on {:?}", String::from_utf8_lossy(data));
}

fn index_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok((files, _)) = read_index(Path::new("model.safetensors.index.json"), text) {
        for f in files {
            assert_eq!(Path::new(&f).file_name().and_then(|n| n.to_str()), Some(f.as_str()), "{f}");
        }
    }
}

fn remote_url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(Some(url)) = RemoteUrl::parse(text) else { return };
    let split =
        |s: &str| -> Vec<String> { if s.is_empty() { Vec::new() } else { s.split('/').map(String::from).collect() } };
    let mut parts = match &url.place {
        Place::Hub { repo, revision, subdir } => {
            let mut p = split(repo);
            p.push(revision.clone());
            p.extend(split(subdir));
            p
        }
        Place::Bucket { bucket, prefix, .. } => {
            let mut p = vec![bucket.clone()];
            p.extend(split(prefix));
            p
        }
        Place::Http { base } => split(base.split("://").nth(1).unwrap_or("")),
    };
    parts.extend(url.file.clone());
    for p in parts {
        assert!(!matches!(p.as_str(), "" | "." | ".."), "{text}: segment `{p}`");
    }
}

fn safetensors_header(data: &[u8]) {
    let p = Path::new("fuzz.safetensors");
    if data.len() >= 8 {
        let n = u64::from_le_bytes(data[..8].try_into().unwrap());
        let end = 8usize.saturating_add(n.min(data.len() as u64) as usize).min(data.len());
        let _ = parse_header(p, n, data.len() as u64, &data[8..end]);
    }
    for extra in [0u64, 1, 8, u64::MAX / 2] {
        let _ = parse_header(p, data.len() as u64, (data.len() as u64).saturating_add(8).saturating_add(extra), data);
    }
}

type Target = fn(&[u8]);
const TARGETS: [(&str, Target); 4] = [
    ("server_frames", server_frames),
    ("index_file", index_file),
    ("remote_url", remote_url),
    ("safetensors_header", safetensors_header),
];

#[test]
fn every_seed_replays() {
    for (name, target) in TARGETS {
        for s in seeds(name) {
            target(&s);
        }
    }
}

/// A seed of `target` with some bytes replaced, inserted or cut.
fn mutated(target: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let all = seeds(target);
    (0..all.len(), proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 0..8)).prop_map(move |(k, edits)| {
        let mut s = all[k].clone();
        for (at, byte, how) in edits {
            let at = if s.is_empty() { 0 } else { at as usize % (s.len() + 1) };
            match how {
                0 if at < s.len() => s[at] = byte,
                1 => s.insert(at, byte),
                _ if at < s.len() => {
                    s.remove(at);
                }
                _ => {}
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        for (_, target) in TARGETS {
            target(&data);
        }
    }

    #[test]
    fn mutated_frames(data in mutated("server_frames")) { server_frames(&data) }

    #[test]
    fn mutated_indexes(data in mutated("index_file")) { index_file(&data) }

    #[test]
    fn mutated_urls(data in mutated("remote_url")) { remote_url(&data) }

    #[test]
    fn mutated_headers(data in mutated("safetensors_header")) { safetensors_header(&data) }
}

/// The config evaluator on fuzz bytes, on the workers' 256 MiB stack as
/// every command runs it: `Ok` or `Err`, never a panic or an abort.
fn eval_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let handle = std::thread::Builder::new()
        .stack_size(patchgen_core::workers::STACK_SIZE)
        .spawn(move || {
            let loader = patchgen_config::loader::MemoryLoader::new([("pkg.a_patch_gen_config", text.as_str())]);
            let _ = patchgen_config::evaluate(&loader, "pkg.a_patch_gen_config", "config");
        })
        .expect("spawn a big-stack thread");
    if let Err(payload) = handle.join() {
        std::panic::resume_unwind(payload);
    }
}

/// A small deterministic generator (xorshift64*): the run is replayable
/// from the seed it prints.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Every entry point fuzzed for a fixed time, as `cargo fuzz run` would
/// but on the stable toolchain: seeds from `fuzz/seeds/<target>/` mutated
/// (bytes replaced, inserted, cut, spliced with another seed) for
/// `PATCHGEN_FUZZ_SECONDS` seconds per target (default 3; CI runs this).
/// `PATCHGEN_FUZZ_SEED` replays a run; a failing input is printed.
#[test]
fn fuzz_every_entry_point_for_a_fixed_time() {
    let seconds: u64 = std::env::var("PATCHGEN_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let seed: u64 = std::env::var("PATCHGEN_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    eprintln!("fuzz: seed {seed} (PATCHGEN_FUZZ_SEED={seed} replays), {seconds} s per target");
    let targets: [(&str, Target); 5] = [
        ("server_frames", server_frames),
        ("index_file", index_file),
        ("remote_url", remote_url),
        ("safetensors_header", safetensors_header),
        ("eval_config", eval_config),
    ];
    let mut rng = Rng(seed);
    for (name, target) in targets {
        let all = seeds(name);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        let mut runs = 0u64;
        while std::time::Instant::now() < until {
            let mut s = all[rng.below(all.len())].clone();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(s.len() + 1);
                match rng.below(4) {
                    0 if at < s.len() => s[at] = rng.next() as u8,
                    1 => s.insert(at, rng.next() as u8),
                    2 if at < s.len() => {
                        s.remove(at);
                    }
                    _ => {
                        // Splice in a piece of another seed.
                        let other = &all[rng.below(all.len())];
                        let from = rng.below(other.len() + 1);
                        let to = (from + rng.below(64)).min(other.len());
                        s.splice(at..at, other[from..to].iter().copied());
                    }
                }
            }
            let input = s.clone();
            if std::panic::catch_unwind(|| target(&input)).is_err() {
                panic!("fuzz {name}: a panic on {:?} (seed {seed})", String::from_utf8_lossy(&s));
            }
            runs += 1;
        }
        eprintln!("fuzz {name}: {runs} inputs in {seconds} s");
    }
}
