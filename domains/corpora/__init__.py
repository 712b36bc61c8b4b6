"""Candidate rows from real upstream corpora (the `--datasets-dir` build).

Modules: `feeds` (the generator `corpus_rows(method)`: the corpus mappings a domain's spec
declares, `DomainSpec.corpus_feeds`, with their shares), the mappings in `benchmarks`
(existing_benchmark: QQP, PAWS, PAWS-X, MRPC, AmbigNQ), `intents` (intent_bottom_up: MASSIVE,
BANKING77), `bfcl` (existing_benchmark BFCL calls) and `xquad` (existing_benchmark XQuAD
questions), `mining` (real_traffic_mined: the rules a domain's spec names, `DomainSpec.mined_rules`),
`licences` (corpus licences and `--commercial-only`), `common` (shared helpers). Every generator
yields nothing when `ctx.datasets` is None, so the embedded default is unchanged;
`feeds.corpus_build(ctx, method) -> (candidates, drops)` also returns the drops counted by reason.
"""
