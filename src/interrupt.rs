//! SIGINT and SIGTERM during `moe convert`: the handler only records the
//! signal for `patchgen_moe::cancel` (an atomic store, safe in a handler);
//! the conversion notices it between pieces, removes its temporary
//! directory (and aborts a multipart upload), and the command exits
//! 128 + the signal (130, 143) as a shell expects. `SA_RESETHAND`: a second
//! signal ends the process at once. Other commands keep the default
//! (die at once: they write nothing that a signal could leave behind).

extern "C" fn on_signal(signal: libc::c_int) {
    patchgen_moe::cancel::request(signal);
}

/// Install the handler for SIGINT and SIGTERM.
#[allow(unsafe_code)]
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` with a zeroed (then filled) struct is its
        // documented use; the handler calls only an atomic store, which is
        // async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The process exit code for an interrupted conversion (128 + signal).
pub fn exit_code() -> Option<i32> {
    patchgen_moe::cancel::requested().map(|s| 128 + s)
}
