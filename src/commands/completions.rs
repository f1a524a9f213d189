//! `patchgen completions bash|zsh|fish`: a shell completion script from
//! the clap tree.

use clap::CommandFactory;

use crate::Cli;
use crate::args::CompletionsArgs;
use crate::printer::ExitStatus;

/// Print the completion script of `args.shell` on stdout.
pub fn run(args: &CompletionsArgs) -> ExitStatus {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout();
    clap_complete::generate(args.shell, &mut cmd, "patchgen", &mut out);
    ExitStatus::Success
}
