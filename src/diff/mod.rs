//! Unified diffs exactly as CPython's `difflib.unified_diff` writes them.
