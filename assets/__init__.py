"""Dagster assets, one module per stage; group names live in assets.groups."""
