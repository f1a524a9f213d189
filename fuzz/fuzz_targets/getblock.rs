//! The Python-text helpers never panic: `inspect.getblock` /
//! `findsource` ports on arbitrary lines, and `difflib.unified_diff` on the
//! two halves of the input (split at the first NUL byte).
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchgen_python::pytext::getblock::{find_function_start, getblock, matches_function_start};
use patchgen_fuzz::{on_big_stack, split_at_nul};

fuzz_target!(|data: &[u8]| {
    let (a, b) = split_at_nul(data);
    on_big_stack(move || {
        let lines: Vec<&str> = a.split_inclusive('\n').collect();
        for start in 0..lines.len().min(8) {
            let _ = getblock(&lines[start..]);
        }
        for line in &lines {
            let _ = matches_function_start(line);
        }
        for n in [0, lines.len() / 2, lines.len().saturating_sub(1), lines.len(), lines.len() + 1] {
            let _ = find_function_start(&lines, n);
        }
        let other: Vec<&str> = b.as_deref().unwrap_or("").split_inclusive('\n').collect();
        for n in [0, 3] {
            let _ = patchgen_python::diff::unified_diff(&lines, &other, "a", "b", n);
        }
    });
});
