//! One file per command: its clap arguments, the call into the library
//! that does the work, and the [`crate::printer::Report`] the printer
//! writes. A command returns how the process ends; it never prints but
//! through the printer.

pub mod bump;
pub mod check;
pub mod clean;
pub mod completions;
pub mod explain;
pub mod generate;
pub mod lint;
pub mod list;
pub mod moe;
pub mod new;
pub mod reference;
pub mod rule;
pub mod server;
pub mod survey;
