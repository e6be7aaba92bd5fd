"""Datasets (protocol and registry in the next commit)."""
