"""Try the trap operators on real requests and write blind-reading samples.

`python -m domains.corpora.traps.survey DATASETS_DIR OUT_DIR` reads short requests (<= 300 chars)
from ShareGPT first turns, Arena-Hard prompts, QQP questions, AmbigQA and TriviaQA questions, MASSIVE
en-US and BANKING77 utterances (scrubbed; a scrubbed text is skipped), follow-ups from ShareGPT
conversations, prints per operator the candidates tried, traps kept and drops by reason, and writes
per operator `<op>.jsonl` ({n, request_a, request_b} [+ context_a, context_b]) and `<op>.key.jsonl`
({n, operator, label, binary, corpus, old, new}): 40 traps each, seeded, spread over corpora."""
from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from domains.base import stable_rng
from domains.corpora.scrub import scrub
from domains.corpora.traps import OPERATORS, SINGLE_TURN, followup_traps, traps
from pipeline.core.taxonomy import binary_label

SINGLE_CORPORA = ("sharegpt", "lmsys_arena", "qqp", "ambigqa", "triviaqa", "massive", "banking77")
MAX_LEN = 300
SAMPLE = 40


def requests(datasets_dir) -> dict[str, list[tuple[str, str]]]:
    """corpus -> [(record id, request text)], short, scrub-clean, first occurrence of each text."""
    from sources.datasets_dir import DatasetsDir
    d = DatasetsDir(datasets_dir)
    out: dict[str, list[tuple[str, str]]] = {}
    for corpus in SINGLE_CORPORA:
        seen, rows = set(), []
        for r in d.load(corpus):
            if corpus == "massive" and r.locale != "en-US":
                continue
            texts = [r.text_a, r.text_b] if corpus == "qqp" else [getattr(r, "question", None) or r.text]
            for k, t in enumerate(texts):
                t = (t or "").strip()
                if not t or len(t) > MAX_LEN or t in seen or scrub(t).scrubbed:
                    continue
                seen.add(t)
                rows.append((f"{r.split}/{r.record_id}#{k}", t))
        out[corpus] = rows
    return out


def conversations(datasets_dir, limit: int = 3000) -> list[tuple[str, list[dict], str]]:
    """(id, earlier turns, final user message) from ShareGPT: the first follow-up of each
    conversation whose final message is short and whose earlier turns total <= 4,000 chars."""
    from sources.datasets_dir import DatasetsDir
    out = []
    for r in DatasetsDir(datasets_dir).load("sharegpt"):
        conv = [(role, text) for role, text in r.conversation if role in ("user", "assistant")]
        for i in range(2, len(conv)):
            if conv[i][0] != "user":
                continue
            final, ctx = conv[i][1].strip(), [{"role": ro, "content": tx} for ro, tx in conv[:i]]
            if 0 < len(final) <= MAX_LEN and sum(len(m["content"]) for m in ctx) <= 4000 \
                    and not any(scrub(m["content"]).scrubbed for m in ctx) and not scrub(final).scrubbed:
                out.append((f"{r.split}/{r.record_id}", ctx, final))
            break
        if len(out) >= limit:
            break
    return out


def run(datasets_dir, out_dir: Path | None = None) -> dict[str, dict]:
    stats: dict[str, dict] = {op: {"candidates": 0, "kept": 0, "drops": Counter()} for op in OPERATORS}
    made: dict[str, list[dict]] = defaultdict(list)
    for corpus, rows in requests(datasets_dir).items():
        for rid, text in rows:
            found, drops = traps(text, f"{corpus}/{rid}")
            for op in SINGLE_TURN:
                stats[op]["candidates"] += 1
            for key, n in drops.items():
                op, reason = key.split(":", 1)
                for name in (SINGLE_TURN if op == "all" else (op,)):
                    stats[name]["drops"][reason] += n
            for t in found:
                stats[t.operator]["kept"] += 1
                made[t.operator].append({"corpus": corpus, "id": rid, "request_a": text, "request_b": t.query_b,
                                         "label": t.label, "old": t.old, "new": t.new, "kind": t.kind})
    convs = conversations(datasets_dir)
    others = [c for _, c, _ in convs]
    for k, (cid, ctx, final) in enumerate(convs):
        pool = [others[(k + j) % len(others)] for j in range(1, 40)]
        found, drops = followup_traps(ctx, final, f"sharegpt/{cid}", pool)
        for op in ("context_detail_change", "context_topic_swap", "context_chatter_inserted"):
            stats[op]["candidates"] += 1
        for key, n in drops.items():
            op, reason = key.split(":", 1)
            for name in ([op] if op in stats else ["context_detail_change", "context_topic_swap",
                                                   "context_chatter_inserted"]):
                stats[name]["drops"][reason] += n
        for t in found:
            stats[t.operator]["kept"] += 1
            made[t.operator].append({"corpus": "sharegpt", "id": cid, "request_a": final, "request_b": t.query_b,
                                     "context_a": ctx, "context_b": list(t.context_b), "label": t.label,
                                     "old": t.old, "new": t.new, "kind": t.kind})
    if out_dir is not None:
        write_blind(made, Path(out_dir))
    return stats


def sample(items: list[dict], op: str, k: int = SAMPLE) -> list[dict]:
    """k items, seeded, round-robin over corpora so that every corpus that made traps is in."""
    rng = stable_rng("blind", op)
    by: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        by[it["corpus"]].append(it)
    for rows in by.values():
        rng.shuffle(rows)
    out, corpora = [], sorted(by)
    while len(out) < k and any(by.values()):
        for c in corpora:
            if by[c] and len(out) < k:
                out.append(by[c].pop())
    return out


def write_blind(made: dict[str, list[dict]], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for op in OPERATORS:
        rows = sample(made.get(op, []), op)
        with open(out_dir / f"{op}.jsonl", "w", encoding="utf-8") as f, \
                open(out_dir / f"{op}.key.jsonl", "w", encoding="utf-8") as g:
            for n, it in enumerate(rows, 1):
                shown = {"n": n, "request_a": it["request_a"], "request_b": it["request_b"]}
                if "context_a" in it:
                    shown.update(context_a=it["context_a"], context_b=it["context_b"])
                f.write(json.dumps(shown, ensure_ascii=False) + "\n")
                g.write(json.dumps({"n": n, "operator": op, "label": it["label"], "binary": binary_label(it["label"], ""),
                                    "corpus": it["corpus"], "id": it["id"], "old": it["old"], "new": it["new"],
                                    "kind": it["kind"]}, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m domains.corpora.traps.survey DATASETS_DIR [OUT_DIR]", file=sys.stderr)
        return 2
    stats = run(argv[0], Path(argv[1]) if len(argv) == 2 else None)
    for op, s in stats.items():
        top = ", ".join(f"{r} {n}" for r, n in s["drops"].most_common(8))
        print(f"{op:26s} candidates {s['candidates']:6d} kept {s['kept']:6d}  drops: {top}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
