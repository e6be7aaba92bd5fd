"""Diagnostics (hubness, QUAG, CLAVI, PEELING, t-SNE) land here in later issues."""
