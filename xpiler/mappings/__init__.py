"""Mapping tables (data with status flags) that drive translation and generate the docs."""
