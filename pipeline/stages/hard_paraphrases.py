"""Hard paraphrases: how many HIT rows an embedder finds far apart (issue 17, item 5).

A HIT row is hard for embedders when the cosine of its two requests under all-MiniLM-L6-v2
(`minilm_l6` in configs/embedders.yaml) is below 0.75, very hard below 0.65. The cosine is the one
row_similarities computes: query_a against query_b, rounded to 6 decimals; context, system prompt
and tools do not enter. Real users' paraphrases often share few words ("Where is my order?" /
"Can you tell me where my parcel is?"), and a cache tuned only on easy ones learns to refuse them,
so a build reports the share overall and per domain (row_difficulty's metadata,
reports/calibration.md and the dataset card).
"""
from __future__ import annotations

from typing import Any, Sequence

from pipeline.core.errors import InputError

EMBEDDER = "minilm_l6"
CUTS = (0.75, 0.65)


def made_from_real_request(source: str) -> bool:
    """Whether a row's request A is one a person sent (a corpus's request: mined traffic, a corpus
    question or utterance, or a real request a trap operator or the team's rewording changed), from
    its `source`: not the team's curated seeds ("curated") nor a language model's ("lm:<model>")."""
    return source != "curated" and not source.startswith("lm:")


def _cell(sims: Sequence[float], real: Sequence[bool] | None = None) -> dict[str, Any]:
    n = len(sims)
    out: dict[str, Any] = {"hit_rows": n}
    for cut in CUTS:
        k = sum(1 for s in sims if s < cut)
        out[f"below_{cut}"] = k
        out[f"share_below_{cut}"] = round(k / n, 4) if n else 0.0
        if real is not None:
            out[f"real_below_{cut}"] = sum(1 for s, r in zip(sims, real) if s < cut and r)
    return out


def hard_share(domains: Sequence[str], is_hit: Sequence[bool], sims: dict[str, Sequence[float]],
               real: Sequence[bool] | None = None) -> dict[str, Any]:
    """Counts and shares of HIT rows below each cut, overall and per domain (sorted), from the
    row-aligned similarities of every embedder (`sims`, as in Similarities.sims); with `real` (per
    row: made from a real request, `made_from_real_request`) the overall cell also counts those."""
    if EMBEDDER not in sims:
        raise InputError(f"configs/embedders.yaml: no embedder '{EMBEDDER}', which measures the hard-paraphrase "
                         "share. Keep it among the members or the held-out embedder")
    cos = sims[EMBEDDER]
    flags = list(real) if real is not None else [False] * len(cos)
    if not len(domains) == len(is_hit) == len(cos) == len(flags):
        raise ValueError(f"hard_share: {len(domains)} domains, {len(is_hit)} labels, {len(cos)} similarities, "
                         f"{len(flags)} real-request flags")
    hits = [(d, round(float(s), 6), r) for d, h, s, r in zip(domains, is_hit, cos, flags) if h]
    return {"embedder": EMBEDDER, "overall": _cell([s for _, s, _ in hits], [r for _, _, r in hits] if real is not None else None),
            "domains": {d: _cell([s for dd, s, _ in hits if dd == d]) for d in sorted({d for d, _, _ in hits})}}


def report_lines(table: dict[str, Any]) -> list[str]:
    """The share as a markdown paragraph and table (one place for every report that shows it)."""
    cols = [f"cosine < {c}" for c in CUTS]

    def share(c: dict, cut: float) -> str:   # from the counts, not the rounded share
        return f"{c[f'below_{cut}'] / c['hit_rows'] if c['hit_rows'] else 0.0:.1%}"

    def row(name: str, c: dict) -> str:
        cells = [f"{c[f'below_{cut}']} ({share(c, cut)})" for cut in CUTS]
        return f"| {name} | {c['hit_rows']} | " + " | ".join(cells) + " |"

    o = table["overall"]
    real = (f" Made from a real request (a corpus's, not the team's seeds or a model's): {o[f'real_below_{CUTS[0]}']} "
            f"of the {o[f'below_{CUTS[0]}']} below {CUTS[0]}.") if f"real_below_{CUTS[0]}" in o else ""
    return [f"Hard paraphrases: HIT rows whose two requests are far apart for `{table['embedder']}` "
            "(sentence-transformers/all-MiniLM-L6-v2; cosine of query_a and query_b, context and tools not "
            f"included): {o[f'below_{CUTS[0]}']} of {o['hit_rows']} ({share(o, CUTS[0])}) below "
            f"{CUTS[0]}, {o[f'below_{CUTS[1]}']} ({share(o, CUTS[1])}) below {CUTS[1]}.{real}", "",
            "| domain | HIT rows | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols),
            *(row(d, c) for d, c in table["domains"].items()), row("all", o)]
