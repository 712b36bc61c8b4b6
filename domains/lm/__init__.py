"""LM-generated rows: paraphrases of curated seeds written by a language model (see generate.py)."""
