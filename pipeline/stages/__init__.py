"""Build stages the assets call as plain functions: selection, embedders and the embedding cache,
difficulty, assembly of the output files."""
