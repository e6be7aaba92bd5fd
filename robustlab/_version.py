"""The package version (one place; the facade robustlab/__init__ and the records read it)."""
__version__ = "0.2.0"
