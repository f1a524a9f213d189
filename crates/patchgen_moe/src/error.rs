//! What can go wrong in `moe` on local files, by kind. Each message already
//! names the file it is about (and the tensor, the JSON line and column, or
//! the index entry where there is one) and, where there is one, what to do;
//! the kind tells a caller which side is at fault: the request, the input
//! checkpoint, or the output.
//! Remote stores have their own [`crate::remote::RemoteError`].

#[derive(Debug, thiserror::Error)]
pub enum MoeError {
    /// The request cannot be served as asked: a size that does not parse, a
    /// destination that is the source or is not empty.
    #[error("{0}")]
    Usage(String),
    /// The checkpoint (an index, a shard header) cannot be read or does not
    /// hold together.
    #[error("{0}")]
    Checkpoint(String),
    /// Its `config.json` cannot be read.
    #[error("{0}")]
    Config(String),
    /// The checkpoint cannot be converted to the requested layout
    /// (quantised experts, problems `moe inspect` reports, an unknown family).
    #[error("{0}")]
    Plan(String),
    /// Writing, verifying or committing the destination failed.
    #[error("{0}")]
    Output(String),
}
