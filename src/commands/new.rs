//! `patchgen new <m>`: the arguments, and `patchgen_scaffold`'s report
//! printed through the one printer.

use patchgen_scaffold::{CategoryArg, Options, Report as NewReport, Request};

use crate::args::{FormatArg, ProjectArg};
use crate::printer::{ExitStatus, PlainReport};
use crate::session::Session;

/// Scaffold a new model's config, __init__.py and toy config from the closest sibling
///
/// The category comes from the upstream module; the template is the project's config of the
/// protocol's reference model for it (or `--like`); its patches are reused with a `name_map`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Examples:
  patchgen new mistral                      category from upstream, template from the project
  patchgen new glm4v --like qwen3_vl        start from the project's qwen3_vl config
  patchgen new olmo2 --backend gpu,npu --dry-run

The upstream module is read from the search path (PYTHONPATH, the virtualenv), as generation reads it.
Nothing existing is overwritten; --dry-run runs everything in a private copy and prints the final plan.")]
pub struct NewArgs {
    /// The HF module name of the model (transformers.models.<m>).
    pub model: String,
    /// The project model to start from (default: the protocol's reference model for the category).
    #[arg(long, value_name = "MODEL")]
    pub like: Option<String>,
    /// Backends to write configs for.
    #[arg(long, value_name = "gpu|npu|gpu,npu", value_delimiter = ',', default_value = "gpu")]
    pub backend: Vec<String>,
    /// The model category (default: detected from the upstream module).
    #[arg(long, value_enum, default_value = "auto")]
    pub category: CategoryArg,
    /// Print the final plan (generation, pruning and lint run in a private copy); write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The distribution the model comes from.
    #[arg(long, value_name = "NAME", default_value = "transformers")]
    pub package: String,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

impl NewArgs {
    pub fn request(&self) -> Request {
        Request {
            model: self.model.clone(),
            like: self.like.clone(),
            backend: self.backend.clone(),
            category: self.category,
            dry_run: self.dry_run,
            package: self.package.clone(),
        }
    }
}

/// `patchgen new`: run it and print the report.
pub fn run(args: &NewArgs) -> ExitStatus {
    let session = match Session::start("new", args.format.format) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let opts = Options {
        args: args.request(),
        cwd: args.project.project.as_ref().map_or_else(|| session.cwd.clone(), |d| session.cwd.join(d)),
        env: session.env.clone(),
    };
    session.finish_with(patchgen_scaffold::run(&opts))
}

impl PlainReport for NewReport {
    const COMMAND: &'static str = "new";
    fn render(&self) -> String {
        patchgen_scaffold::render_text(self)
    }
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(!self.generation.iter().all(|g| g.ok))
    }
}
