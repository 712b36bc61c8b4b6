"""Candidate rows from real upstream corpora (the `--datasets-dir` build).

Modules: `benchmarks` (existing_benchmark: QQP, PAWS, PAWS-X, MRPC, AmbigNQ), `intents`
(intent_bottom_up: MASSIVE, BANKING77), `bfcl` (existing_benchmark tool rows), `xquad`
(existing_benchmark multilingual rows), `licences` (corpus licences and `--commercial-only`),
`common` (shared helpers). Every generator yields nothing when `ctx.datasets` is None, so the
embedded default is unchanged. Each generator has a `*_build(ctx) -> (candidates, drops)` form that
also returns its drops counted by reason; the generator registered in a domain's SPEC yields the
candidates only.
"""
