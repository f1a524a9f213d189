//! The safetensors header parser never panics: the input is a whole file
//! (8-byte length + JSON + data); `parse_header` gets the claimed length and
//! the bytes after it, as `read_header` would, plus a second call with the
//! input taken as the JSON alone against a few file lengths.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use patchgen_moe::header::parse_header;

fuzz_target!(|data: &[u8]| {
    let p = Path::new("fuzz.safetensors");
    let file_len = data.len() as u64;
    if data.len() >= 8 {
        let n = u64::from_le_bytes(data[..8].try_into().unwrap());
        let end = 8usize.saturating_add(n.min(file_len) as usize).min(data.len());
        let _ = parse_header(p, n, file_len, &data[8..end]);
    }
    for extra in [0u64, 1, 8, u64::MAX / 2] {
        let _ = parse_header(p, data.len() as u64, file_len.saturating_add(8).saturating_add(extra), data);
    }
});
