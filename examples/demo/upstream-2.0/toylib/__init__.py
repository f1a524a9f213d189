"""A tiny stand-in for a HuggingFace-style model library (read as text by patchgen, never imported)."""

__version__ = "2.0.0"
