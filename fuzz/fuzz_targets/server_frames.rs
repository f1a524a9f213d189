//! The language server's framing never panics, never hangs and always makes
//! progress: the input is stdin as a client would write it (any bytes,
//! `Content-Length` headers or not); every message read is either a
//! JSON-RPC message or a skipped one, and reading ends at the end of input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchgen_server::transport::{Framed, read_message};

fuzz_target!(|data: &[u8]| {
    let mut input = Framed::new(std::io::BufReader::new(data));
    // Each call consumes at least one byte or ends: at most len + 1 calls.
    for _ in 0..=data.len() {
        match read_message(&mut input) {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
    panic!("read_message made no progress");
});
