//! A `model.safetensors.index.json` never makes the index parser panic, and
//! every file it accepts is a plain name in the checkpoint's directory.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use patchgen_moe::checkpoint::parse_index;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok((files, _)) = parse_index(Path::new("model.safetensors.index.json"), text) {
        for f in files {
            assert_eq!(Path::new(&f).file_name().and_then(|n| n.to_str()), Some(f.as_str()), "{f}");
        }
    }
});
