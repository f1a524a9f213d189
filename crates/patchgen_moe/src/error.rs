//! What can go wrong in `moe` on local files, by what failed. Each variant
//! carries its parts (the file, the argument, the problem) and its message
//! names the file it is about (and the tensor, the JSON line and column, or
//! the index entry where there is one) and, where there is one, what to do.
//! The checkpoint reader and the planner word their many located problems
//! themselves (`Checkpoint`, `Plan`, `Output` hold those messages); the
//! side at fault is [`MoeError::side`].
//! Remote stores have their own [`crate::remote::RemoteError`].

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MoeError {
    /// A shard size (`--shard-size`) that does not parse or is zero.
    #[error("{given}: {problem}")]
    ShardSize { given: String, problem: SizeProblem },
    /// The destination is the source or inside it.
    #[error("{}: DST is SRC or inside it: refusing to write into the source", dst.display())]
    DstInSource { dst: PathBuf },
    /// The destination exists and is not an empty directory.
    #[error("{}: exists and is not an empty directory: refusing to overwrite", dst.display())]
    DstNotEmpty { dst: PathBuf },
    /// A `config.json` that cannot be read.
    #[error("{}: {source}", path.display())]
    ConfigUnreadable { path: PathBuf, source: std::io::Error },
    /// A `config.json` whose values cannot be used (a size that overflows,
    /// ...), located in the message.
    #[error("{0}")]
    Config(String),
    /// A `config.json` that is not JSON.
    #[error("{}:{line}:{column}: invalid JSON: {message}", path.display())]
    ConfigJson { path: PathBuf, line: usize, column: usize, message: String },
    /// The checkpoint (an index, a shard header) cannot be read or does not
    /// hold together.
    #[error("{0}")]
    Checkpoint(String),
    /// The checkpoint cannot be converted to the requested layout
    /// (quantised experts, problems `moe inspect` reports, an unknown family).
    #[error("{0}")]
    Plan(String),
    /// Writing, verifying or committing the destination failed.
    #[error("{0}")]
    Output(String),
}

/// Why a shard size does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeProblem {
    #[error("not a size (e.g. 5GB, 500MB, 1GiB)")]
    NotASize,
    #[error("unknown unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")]
    UnknownUnit,
    #[error("the shard size must be positive")]
    Zero,
}

/// Which side of a request a [`MoeError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The request as asked (arguments, the destination's state).
    Request,
    /// The input checkpoint or its `config.json`.
    Input,
    /// The output being written.
    Output,
}

impl MoeError {
    pub fn side(&self) -> Side {
        match self {
            MoeError::ShardSize { .. } | MoeError::DstInSource { .. } | MoeError::DstNotEmpty { .. } => Side::Request,
            MoeError::ConfigUnreadable { .. }
            | MoeError::Config(_)
            | MoeError::ConfigJson { .. }
            | MoeError::Checkpoint(_)
            | MoeError::Plan(_) => Side::Input,
            MoeError::Output(_) => Side::Output,
        }
    }
}
