//! Emulation of `inspect.getblock` (CPython 3.11 `BlockFinder`).
