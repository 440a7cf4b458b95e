"""Frob package (test fixture)."""
