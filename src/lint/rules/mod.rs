//! The rule table: one file per rule (its `//!` comment is its
//! documentation), listed here in code order.

use super::Rule;

mod pg101_dead_patch_target;
mod pg102_orphaned_override;
mod pg103_suppressed_undefined_name;
mod pg104_unresolved_import;
mod pg201_call_site_signature;
mod pg202_sibling_signature_drift;
pub mod pg203_dropped_parameters;
pub mod pg301_logits_to_keep_order;

/// Every rule, in code order.
pub static RULES: &[Rule] = &[
    pg101_dead_patch_target::RULE,
    pg102_orphaned_override::RULE,
    pg103_suppressed_undefined_name::RULE,
    pg104_unresolved_import::RULE,
    pg201_call_site_signature::RULE,
    pg202_sibling_signature_drift::RULE,
    pg203_dropped_parameters::RULE,
    pg301_logits_to_keep_order::RULE,
];
