//! Config evaluation never panics, hangs or overflows the stack: the input is
//! one config module, or two (split at the first NUL byte) that may import
//! each other as `pkg.a_patch_gen_config` / `pkg.b_patch_gen_config`. Every
//! plan that evaluates is then generated over the toy and fixture upstreams.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchgen_fuzz::{eval_modules, fixed_upstreams, generate_and_diff, on_big_stack, split_at_nul};

fuzz_target!(|data: &[u8]| {
    let (a, b) = split_at_nul(data);
    on_big_stack(move || {
        let plans = eval_modules(&a, b.as_deref());
        for plan in &plans {
            for upstream in fixed_upstreams() {
                generate_and_diff(plan, upstream);
            }
        }
    });
});
