//! `patchgen server`: the patch config language server over stdio
//! (`patchgen_server`). Stdout is the protocol: nothing is printed; the
//! exit code is the protocol's (0 after `shutdown` then `exit`, else 1).

use std::time::Duration;

use crate::printer::ExitStatus;

const SERVER_EXAMPLES: &str = "\
Examples:
  patchgen server                      serve the project of the working directory's configs (LSP over stdio)
  patchgen server --debounce-ms 150    coalesce keystrokes longer while a check runs
Editor setup (VS Code, Neovim, Helix, Zed): docs/editors.md";

/// Language server for patch configs (LSP over stdio): findings as you type, hover, definition, completion, fixes
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = SERVER_EXAMPLES)]
pub struct ServerArgs {
    /// While a check of the config runs or waits, wait this long after a change before checking again (an idle config is checked at once)
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub debounce_ms: u64,
    /// Do not run ruff on the generated code (its rejections are then not reported)
    #[arg(long)]
    pub no_ruff: bool,
    /// Talk over stdin/stdout (the only transport; accepted for editors that pass it)
    #[arg(long)]
    pub stdio: bool,
}

pub fn run(args: &ServerArgs) -> ExitStatus {
    let options = patchgen_server::ServerOptions {
        debounce: Duration::from_millis(args.debounce_ms),
        with_ruff: !args.no_ruff,
        env: patchgen_core::settings::Env::capture(),
        ..patchgen_server::ServerOptions::default()
    };
    match patchgen_server::run_stdio(options) {
        patchgen_server::Exit::Clean => ExitStatus::Success,
        patchgen_server::Exit::WithoutShutdown | patchgen_server::Exit::InputClosed => ExitStatus::Failure,
    }
}
