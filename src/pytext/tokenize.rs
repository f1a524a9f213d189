//! Enough of CPython 3.11 `tokenize.generate_tokens` for `inspect.BlockFinder`.
