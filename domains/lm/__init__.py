"""LM-generated rows: paraphrases of curated seeds written by a language model.

Domain-agnostic: `generate.py` prompts the model and pairs kept rewordings, `rules.py` holds the
answer-token rules a rewording must pass. A domain takes part through `DomainSpec.lm` (its items,
domains.base.LMHooks) and imports this package; this package imports no domain.
"""
