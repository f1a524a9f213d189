use std::collections::HashMap;
use std::sync::Arc;

use super::*;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Payload {
    py: String,
}

fn fixture() -> (tempfile::TempDir, Cache, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join(DEFAULT_DIR)).unwrap();
    let input = dir.path().join("config.py");
    std::fs::write(&input, "x = 1\n").unwrap();
    (dir, cache, input)
}

fn prober() -> Prober {
    Prober::new(HashMap::from([("setting".to_string(), probe::value_digest("a"))]))
}

fn key() -> Key {
    Key::new("check", ["pkg.m_patch_gen_config".to_string(), "config".to_string()])
}

fn inputs(path: &Path) -> Inputs {
    Inputs {
        own: vec![Input::content("config module", path, b"x = 1\n")],
        shared: vec![Arc::new(vec![Input::value("setting", "a")])],
    }
}

fn payload() -> Payload {
    Payload { py: "abc".into() }
}

#[test]
fn the_directory_ignores_itself_and_is_tagged() {
    let (_d, cache, _) = fixture();
    assert_eq!(std::fs::read_to_string(cache.dir().join(".gitignore")).unwrap(), GITIGNORE);
    assert!(
        std::fs::read_to_string(cache.dir().join(TAG_FILE))
            .unwrap()
            .starts_with("Signature: 8a477f597d28d172789f06886806bc55")
    );
    // Opening again is fine; a foreign non-empty directory is refused.
    Cache::open(cache.dir()).unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("main.py"), "").unwrap();
    assert!(Cache::open(other.path()).is_err());
    assert!(!other.path().join(".gitignore").exists());
    // ... unless it is named as ours (another patchgen cache made it).
    let named = other.path().join(DEFAULT_DIR);
    std::fs::create_dir_all(named.join("wheels")).unwrap();
    Cache::open(&named).unwrap();
    assert!(named.join(TAG_FILE).is_file() && named.join("wheels").is_dir());
}

#[test]
fn a_stored_entry_hits_until_an_input_changes() {
    let (_d, cache, input) = fixture();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::NoEntry));
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()));
    // Another key does not see it.
    let other = Key::new("check", ["other".to_string()]);
    assert_eq!(cache.lookup::<Payload>(&other, &prober()).miss(), Some(Miss::NoEntry));

    std::fs::write(&input, "x = 2\n").unwrap();
    let miss = cache.lookup::<Payload>(&key(), &prober()).miss().unwrap();
    assert_eq!(miss.to_string(), format!("config module {} changed", input.display()));

    std::fs::write(&input, "x = 1\n").unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()));
    let changed_setting = Prober::new(HashMap::from([("setting".to_string(), probe::value_digest("b"))]));
    assert_eq!(cache.lookup::<Payload>(&key(), &changed_setting).miss().unwrap().to_string(), "setting changed");
}

#[test]
fn an_input_that_changed_while_computing_is_not_stored() {
    let (_d, cache, input) = fixture();
    let recorded = inputs(&input);
    std::fs::write(&input, "x = 3\n").unwrap();
    let err = cache.store(&key(), &recorded, &payload(), &prober()).unwrap_err();
    assert!(matches!(err, NotStored::Changed(_)), "{err}");
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::NoEntry));
}

#[test]
fn a_fresh_identity_is_not_trusted() {
    let (_d, cache, input) = fixture();
    let written = std::time::Instant::now();
    std::fs::write(&input, "x = 2\n").unwrap();
    let p = prober();
    let recorded =
        Inputs { own: vec![p.input("ruff binary", Probe::Identity { path: input.clone() }).unwrap()], shared: vec![] };
    let stored = cache.store(&key(), &recorded, &payload(), &p);
    // (Only decisive when the machine was quick enough to store within the window.)
    if written.elapsed() < probe::RACY {
        assert!(matches!(stored, Err(NotStored::Racy(_))), "{stored:?}");
    }
    std::thread::sleep(probe::RACY);
    cache.store(&key(), &recorded, &payload(), &prober()).unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()));
}

#[test]
fn damaged_entries_are_misses_and_get_rewritten() {
    let (_d, cache, input) = fixture();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    let path = cache.path(&key());
    let good = std::fs::read(&path).unwrap();
    let mut damaged: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("garbage".into(), b"\x00\xff garbage".to_vec()),
        ("header only".into(), good[..good.iter().position(|&b| b == b'\n').unwrap()].to_vec()),
    ];
    for cut in [1, good.len() / 2, good.len() - 1] {
        damaged.push((format!("truncated at {cut}"), good[..cut].to_vec()));
    }
    for at in [good.len() - 3, good.len() / 2, 20] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x01;
        damaged.push((format!("bit flipped at {at}"), flipped));
    }
    for (what, bytes) in damaged {
        std::fs::write(&path, &bytes).unwrap();
        let miss = cache.lookup::<Payload>(&key(), &prober()).miss();
        assert!(matches!(miss, Some(Miss::Corrupt(_))), "{what}: {miss:?}");
        cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
        assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()), "{what}");
    }
    // A payload of another shape (an older layout) is unusable, not a crash.
    cache.store(&key(), &inputs(&input), &vec![1, 2, 3], &prober()).unwrap();
    assert!(matches!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::Corrupt(_))));
}

#[test]
fn a_damaged_or_missing_group_is_a_miss_and_gets_rewritten() {
    let (_d, cache, input) = fixture();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    let groups: Vec<PathBuf> =
        std::fs::read_dir(cache.dir().join(GROUPS)).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(groups.len(), 1);
    let good = std::fs::read(&groups[0]).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 1;
    for bytes in [Some(flipped), None] {
        match bytes {
            Some(b) => std::fs::write(&groups[0], b).unwrap(),
            None => std::fs::remove_file(&groups[0]).unwrap(),
        }
        assert!(matches!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::Corrupt(_))));
        cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
        assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()));
        assert_eq!(std::fs::read(&groups[0]).unwrap(), good);
    }
    // A changed input of a group names the input.
    let changed = Prober::new(HashMap::from([("setting".to_string(), probe::value_digest("b"))]));
    assert_eq!(cache.lookup::<Payload>(&key(), &changed).miss().unwrap().to_string(), "setting changed");
}

#[test]
fn foreign_versions_and_formats_are_misses() {
    let (_d, cache, input) = fixture();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    let path = cache.path(&key());
    let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let other_version = body.replace(&format!("\"patchgen\":\"{}\"", version()), "\"patchgen\":\"0.0.1-other\"");
    assert_ne!(other_version, body);
    let resum = |body: &str| {
        format!("{MAGIC} {FORMAT} {} {}\n{body}", body.len(), probe::digest_parts([body.as_bytes()]).hex())
    };
    std::fs::write(&path, resum(&other_version)).unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::Foreign("patchgen 0.0.1-other".into())));
    std::fs::write(&path, header.replace(&format!(" {FORMAT} "), " 999 ") + "\n" + body).unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::Foreign("cache format 999".into())));
    // An entry copied under another key's name.
    let other = Key::new("check", ["other".to_string()]);
    std::fs::write(cache.path(&other), resum(body)).unwrap();
    assert!(matches!(cache.lookup::<Payload>(&other, &prober()).miss(), Some(Miss::Corrupt(_))));
}

/// An entry is read only at the size its header records: one grown or
/// truncated since (even with a matching checksum of what is there) is a
/// miss, not a read of whatever the file now holds.
#[test]
fn an_entry_whose_size_is_not_its_record_is_not_read() {
    let (_d, cache, input) = fixture();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    let path = cache.path(&key());
    let good = std::fs::read(&path).unwrap();
    assert!(matches!(cache.lookup::<Payload>(&key(), &prober()), Lookup::Hit(_)));
    let mut grown = good.clone();
    grown.extend_from_slice(b"trailing garbage");
    std::fs::write(&path, &grown).unwrap();
    let miss = cache.lookup::<Payload>(&key(), &prober()).miss();
    assert!(matches!(&miss, Some(Miss::Corrupt(m)) if m.contains("its header records")), "{miss:?}");
    std::fs::write(&path, &good[..good.len() - 3]).unwrap();
    assert!(matches!(cache.lookup::<Payload>(&key(), &prober()).miss(), Some(Miss::Corrupt(_))));
}

#[test]
fn clean_removes_only_what_the_cache_writes() {
    let (d, cache, input) = fixture();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    std::fs::write(cache.dir().join(ENTRIES).join(".tmp-leftover"), "x").unwrap();
    let cleaned = clean(cache.dir()).unwrap();
    assert_eq!((cleaned.entries, cleaned.removed_dir), (1, true));
    assert!(!cache.dir().exists());
    assert_eq!(clean(cache.dir()).unwrap().entries, 0);
    // Something of the user's inside is kept, with the directory.
    let cache = Cache::open(cache.dir()).unwrap();
    std::fs::write(cache.dir().join("notes.txt"), "mine").unwrap();
    assert!(!clean(cache.dir()).unwrap().removed_dir);
    assert!(cache.dir().join("notes.txt").exists());
    // An untagged directory is refused.
    assert!(clean(d.path()).is_err());
    assert!(input.exists());
    // A store after a clean recreates the cache.
    let cache = Cache::open(&d.path().join("fresh")).unwrap();
    clean(cache.dir()).unwrap();
    cache.store(&key(), &inputs(&input), &payload(), &prober()).unwrap();
    assert_eq!(cache.lookup::<Payload>(&key(), &prober()).hit(), Some(payload()));
}

#[test]
fn concurrent_writers_never_leave_a_torn_entry() {
    let (_d, cache, input) = fixture();
    let inputs = inputs(&input);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (cache, inputs) = (&cache, &inputs);
            s.spawn(move || {
                for i in 0..50 {
                    let p = Payload { py: format!("{t}-{i}-{}", "x".repeat(i * 100)) };
                    cache.store(&key(), inputs, &p, &prober()).unwrap();
                    match cache.lookup::<Payload>(&key(), &prober()) {
                        Lookup::Hit(_) => {}
                        Lookup::Miss(m) => panic!("{m}"),
                    }
                }
            });
        }
    });
    let leftovers = std::fs::read_dir(cache.dir().join(ENTRIES)).unwrap().count();
    assert_eq!(leftovers, 1);
}

impl<P> Lookup<P> {
    fn hit(self) -> Option<P> {
        match self {
            Lookup::Hit(p) => Some(p),
            Lookup::Miss(_) => None,
        }
    }

    fn miss(self) -> Option<Miss> {
        match self {
            Lookup::Hit(_) => None,
            Lookup::Miss(m) => Some(m),
        }
    }
}
