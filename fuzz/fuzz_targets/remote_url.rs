//! A remote address never makes the parser panic, and an accepted one has
//! no `.`, `..` or empty segment: nothing it names can climb out of its
//! repository, bucket or cache directory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchgen_moe::remote::url::{Place, RemoteUrl};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(Some(url)) = RemoteUrl::parse(text) {
        let parts: Vec<String> = match &url.place {
            Place::Hub { repo, revision, subdir } => {
                let mut p: Vec<String> = repo.split('/').map(String::from).collect();
                p.push(revision.clone());
                p.extend(subdir.split('/').filter(|s| !subdir.is_empty() || !s.is_empty()).map(String::from));
                p
            }
            Place::Bucket { bucket, prefix, .. } => {
                let mut p = vec![bucket.clone()];
                p.extend(prefix.split('/').filter(|s| !prefix.is_empty() || !s.is_empty()).map(String::from));
                p
            }
            Place::Http { base } => base.split("://").nth(1).unwrap_or("").split('/').map(String::from).collect(),
        };
        for p in parts.iter().chain(url.file.iter()) {
            assert!(!matches!(p.as_str(), "" | "." | ".."), "{text}: segment `{p}`");
        }
    }
});
