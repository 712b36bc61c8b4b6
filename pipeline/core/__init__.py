"""Shared machinery every other package may import: typed errors and warnings, project paths,
the settings (every environment variable, the one cache root), hashing and canonical JSON, the
atomic writer, the SQLite opener, config loading, the registry helper and the label taxonomy.
Standard library only (YAML is read lazily); imports nothing else of the project."""
