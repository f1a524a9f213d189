//! The rule table: one file per rule (its `//!` comment is its
//! documentation), listed here in code order.

use super::Rule;

mod pg101_dead_patch_target;
mod pg102_orphaned_override;
mod pg103_suppressed_undefined_name;
mod pg104_unresolved_import;
mod pg105_unexplained_hunk;
mod pg201_call_site_signature;
mod pg202_sibling_signature_drift;
mod pg203_dropped_parameters;
mod pg301_logits_to_keep_order;
mod pg302_output_fields_dropped;
mod pg303_auto_docstring_contract;
mod pg304_partial_rotary_full_kernel;
mod pg305_init_weights_container;
mod pg306_automodel_bypass;
mod pg401_moe_converter_missing;
mod pg402_converter_shape_ambiguity;
mod pg403_experts_implementation_retained;
mod pg404_liger_mlp_intermediate_size;
mod pg501_patch_markers;
mod pg502_registry_hygiene;
mod pg503_test_coverage;
mod pg504_pin_consistency;

/// Every rule, in code order.
pub static RULES: &[Rule] = &[
    pg101_dead_patch_target::RULE,
    pg102_orphaned_override::RULE,
    pg103_suppressed_undefined_name::RULE,
    pg104_unresolved_import::RULE,
    pg105_unexplained_hunk::RULE,
    pg201_call_site_signature::RULE,
    pg202_sibling_signature_drift::RULE,
    pg203_dropped_parameters::RULE,
    pg301_logits_to_keep_order::RULE,
    pg302_output_fields_dropped::RULE,
    pg303_auto_docstring_contract::RULE,
    pg304_partial_rotary_full_kernel::RULE,
    pg305_init_weights_container::RULE,
    pg306_automodel_bypass::RULE,
    pg401_moe_converter_missing::RULE,
    pg402_converter_shape_ambiguity::RULE,
    pg403_experts_implementation_retained::RULE,
    pg404_liger_mlp_intermediate_size::RULE,
    pg501_patch_markers::RULE,
    pg502_registry_hygiene::RULE,
    pg503_test_coverage::RULE,
    pg504_pin_consistency::RULE,
];
