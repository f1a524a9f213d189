//! `patchgen lint` (work in progress on this branch: the rule analyses;
//! the engine comes from the `lint` branch).

pub mod pyfacts;
pub mod rules;
