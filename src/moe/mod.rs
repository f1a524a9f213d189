//! `patchgen moe`: an MoE checkpoint's expert layout, read from safetensors
//! headers, and its offline conversion between the per-expert and the
//! transformers-v5 fused layouts.
//!
//! - `recipes`: which upstream conversion recipe applies to a `model_type`
//!   (static reading of `transformers/conversion_mapping.py`; shared with
//!   lint rule PG401);
//! - `modeling`: whether a modeling module's classes hold fused expert
//!   parameters (AST; shared with PG401).
pub mod modeling;
pub mod recipes;
