// The pipeline allocates many small strings and syntax trees; mimalloc (as
// ruff itself uses) cuts generation time by a fifth over the system
// allocator (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let env = patchgen_core::settings::Env::capture();
    let timings: patchgen_core::timings::Writer = |line| eprintln!("{line}");
    patchgen_core::timings::begin(patchgen_core::settings::timings_enabled(&env).then_some(timings));
    // A bug must never show a user a raw panic: say what happened and how to report it.
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "patchgen: internal error: {info}\n  This is a bug in patchgen; please report it with the command you ran and the config involved."
        );
    }));
    let code = std::panic::catch_unwind(patchgen::main).unwrap_or(3);
    patchgen_core::timings::mark("exit");
    std::process::exit(code);
}
