"""The extract: every verified candidate pair the corpora give, one JSON line each, committed in
`sources/extract/pairs.jsonl`, so the published build holds real requests without the corpora.

What it holds: the corpus-derived candidates of every registered domain, after verification under
the domain's policy:
- real_traffic_mined: the pairs mined from real user traffic (domains.corpora.mining: ShareGPT,
  Chatbot Arena, WildChat), their earlier turns scrubbed and cut as mining keeps them;
- existing_benchmark and intent_bottom_up: the rows of the corpus feeds each domain's spec declares
  (domains.corpora.feeds), asked to fill EXTRACT_NEED rows per label (more than any profile takes,
  so selection, not the extract, decides the mix);
- adversarial_perturbation from real requests: the open-world trap operators applied to real user
  requests and corpus questions (domains.corpora.realtraps, passed in as `extra`);
- curated rewordings of real requests: the team's hard paraphrases of corpus requests, joined to the
  corpora by record and hash (domains.corpora.rewordings, passed in as `extra` after the traps).
Each line: `{"corpus", "corpus_files": [{"path", "sha256"}], "licence", "rule", "row": {...}}`, where
`rule` names what made the pair ("<method>/<generator>/<template or operator>") and `row` is the
candidate (every Candidate field, provenance included). Lines are canonical JSON (sorted keys), in
(domain, construction method, content key) order, so the same corpora give the same bytes.

One way in for the build: the `corpus_extract` asset (assets/sources.py) makes the extract from
the datasets dir when there is one (`build`), else reads this file (`read`); either way the
candidates reach the generators as the lines parse back (GenContext.extract), so a build from the
corpora and a build from the committed extract of the same corpora select the same rows.
`cacheeval extract --datasets-dir DIR` regenerates the file (`write`).
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from domains.base import LABELS, Candidate, GenContext, Provenance
from pipeline.core.errors import InputError
from pipeline.core.hashing import canonical_json

VERSION = "1"
EXTRACT_NEED = 200   # rows per label each corpus feed is asked for when extracting (shares apply)
CORPUS_METHODS = ("existing_benchmark", "intent_bottom_up")
_ROW_FIELDS = tuple(f.name for f in fields(Candidate))
_PROV_FIELDS = tuple(f.name for f in fields(Provenance))
_TUPLE_FIELDS = ("context_a", "context_b", "tools_a", "tools_b")


@dataclass(frozen=True)
class Extract:
    """The extract's candidates (line order) and the sha256 of its bytes."""

    candidates: tuple[Candidate, ...]
    sha256: str
    data: bytes = b""                                        # the file's bytes
    drops: Mapping[str, int] = field(default_factory=dict)   # made, not kept: reason -> count (build only)

    def of(self, domain: str) -> list[Candidate]:
        return [c for c in self.candidates if c.domain == domain]

    def methods(self) -> dict[str, int]:
        return dict(sorted(Counter(c.construction_method for c in self.candidates).items()))


def _files_of(c: Candidate) -> list[str]:
    """The corpus files a candidate names, relative to the datasets dir ("qqp/train.json")."""
    out = []
    for part in (c.provenance.source_file or "").split("|"):
        if part:
            out.append(part if "/" in part and part.split("/", 1)[0] in c.source.split("+") else f"{c.source}/{part}")
    return out


def rule_of(c: Candidate) -> str:
    """What made the pair: "<method>/<generator>/<template or operator>"."""
    return "/".join((c.construction_method, c.provenance.generator,
                     c.provenance.operator or c.provenance.template_id or "-"))


def to_line(c: Candidate, sha_of: Mapping[str, str]) -> str:
    """One extract line for `c`; `sha_of`: the sha256 of every corpus file read (datasets-dir relative)."""
    row: dict[str, Any] = {}
    for name in _ROW_FIELDS:
        value = getattr(c, name)
        row[name] = value.to_dict() if name == "provenance" else value
    files = [{"path": p, "sha256": sha_of.get(p, "")} for p in _files_of(c)]
    obj = {"corpus": c.source, "corpus_files": files, "licence": c.licence, "rule": rule_of(c), "row": row}
    return canonical_json(json.loads(canonical_json(obj)))


def from_line(text: str, where: str) -> Candidate:
    """The candidate of one line; InputError naming `where` (file:line) on anything malformed."""
    try:
        obj = json.loads(text)
        row = obj.get("row") if isinstance(obj, dict) else None
        if not isinstance(row, dict) or set(row) != set(_ROW_FIELDS):
            raise ValueError(f"row fields {sorted(set(row or ()) ^ set(_ROW_FIELDS))} missing or unknown")
        prov = row["provenance"]
        if not isinstance(prov, dict) or set(prov) != set(_PROV_FIELDS):
            raise ValueError(f"provenance fields {sorted(set(prov or ()) ^ set(_PROV_FIELDS))} missing or unknown")
        values = dict(row)
        values["provenance"] = Provenance(**prov)
        for name in _TUPLE_FIELDS:
            if values[name] is not None:
                values[name] = tuple(dict(x) for x in values[name])
        c = Candidate(**values)
        if c.label not in LABELS:
            raise ValueError(f"label {c.label!r} is not one of {', '.join(LABELS)}")
        return c
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{where}: not an extract line ({e}). Regenerate the file with "
                         "`cacheeval extract --datasets-dir DIR`") from None


def serialise(candidates: Iterable[Candidate], sha_of: Mapping[str, str]) -> bytes:
    ordered = sorted(candidates, key=lambda c: (c.domain, c.construction_method, c.key))
    return "".join(to_line(c, sha_of) + "\n" for c in ordered).encode("utf-8")


def parse(data: bytes, name: str) -> Extract:
    """The extract in `data` (the bytes of file `name`)."""
    cands = []
    # split on "\n" only: str.splitlines() also splits inside a line at U+2028, U+0085 ..., which
    # canonical JSON keeps unescaped in real text
    for n, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if line.strip():
            cands.append(from_line(line, f"{name}:{n}"))
    return Extract(tuple(cands), hashlib.sha256(data).hexdigest(), data)


def read(path: Path) -> Extract:
    """The committed extract; an absent file is an empty extract (a project without one)."""
    if not path.is_file():
        return Extract((), hashlib.sha256(b"").hexdigest(), b"")
    return parse(path.read_bytes(), str(path))


def build(datasets: Any, mined: Any, domains: Sequence[str], sha_of: Mapping[str, str],
          extra: Iterable[Candidate] = ()) -> tuple[bytes, Counter]:
    """The extract's bytes from the corpora: each domain's corpus-feed rows (EXTRACT_NEED per label),
    its mined pairs, and `extra` (the trap operators' candidates), each verified under its domain's
    policy; and the drops by reason."""
    from domains import get_domain
    from domains.corpora.feeds import corpus_build
    from domains.verify import verify

    drops: Counter = Counter()
    kept: dict[str, Candidate] = {}
    pool: list[Candidate] = list(extra)
    for domain in domains:
        spec = get_domain(domain)
        ctx = GenContext(domain=domain, profile="extract", need={label: EXTRACT_NEED for label in LABELS},
                         datasets=datasets, mined=mined, policy=spec.policy)
        for method in CORPUS_METHODS:
            rows, why = corpus_build(ctx, method)
            pool += rows
            for k, n in why.items():
                drops[f"{domain}:{method}:{k}"] += n
        if mined is not None:
            pool += mined.of(domain)
    # Known issue: `extra` (the traps) comes first, so a mined follow-up pair that is also a topic-swap
    # trap (the same final message after another real conversation) is kept as the trap. Putting the
    # mined pairs first is right, and changes the extract: left for the next rebuild.
    for c in pool:
        spec = get_domain(c.domain)
        outcome = verify(c, spec.policy)
        if not outcome.passed:
            drops[f"{c.domain}:{c.construction_method}:{outcome.reason}"] += 1
            continue
        if c.key in kept:
            drops[f"{c.domain}:{c.construction_method}:duplicate"] += 1
            continue
        kept[c.key] = c
    return serialise(kept.values(), sha_of), drops


def write(path: Path, data: bytes) -> None:
    from pipeline.core.writer import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)

