//! One file per rule.

pub mod pg301_logits_to_keep_order;
