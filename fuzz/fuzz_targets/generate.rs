//! Generation never panics, hangs or overflows the stack on any upstream
//! module. Input: `upstream` (run with the fixed configs of `src/lib.rs` and
//! every fixture config), or `config NUL upstream` (the config's own plan as
//! well).
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use patchgen_config::source::ParsedFile;
use patchgen_fuzz::{eval_modules, fixed_plans, generate_and_diff, on_big_stack, split_at_nul};

fuzz_target!(|data: &[u8]| {
    let (a, b) = split_at_nul(data);
    on_big_stack(move || {
        let (own, upstream) = match &b {
            Some(upstream) => (eval_modules(&a, None), upstream.as_str()),
            None => (Vec::new(), a.as_str()),
        };
        let Ok(parsed) = ParsedFile::parse(PathBuf::new(), upstream) else { return };
        for plan in own.iter().chain(fixed_plans()) {
            generate_and_diff(plan, &parsed);
        }
    });
});
