fn main() {
    // A bug must never show a user a raw panic: say what happened and how to report it.
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "patchgen: internal error: {info}\n  This is a bug in patchgen; please report it with the command you ran and the config involved."
        );
    }));
    let code = std::panic::catch_unwind(patchgen::cli::main).unwrap_or(3);
    std::process::exit(code);
}
