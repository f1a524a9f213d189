//! Why the scaffold declines to write something it could (a kernel guard,
//! a checkpoint converter, a replayed renaming): not an error of the run —
//! the reason is reported as a warning or a TODO and `new` goes on without
//! that piece. A type of its own so that a reason is never mistaken for a
//! failure, and so that `?` turns the literal reasons of a guard into one.

/// The reason, as the report prints it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Declined(pub String);

impl From<&str> for Declined {
    fn from(reason: &str) -> Declined {
        Declined(reason.to_string())
    }
}

impl From<String> for Declined {
    fn from(reason: String) -> Declined {
        Declined(reason)
    }
}
