"""outputs/hf/: the benchmark as a Hugging Face dataset (Parquet per split, with explicit Arrow types)
and its dataset card, generated from the build.

Configurations (the Hub reads them from the card's YAML header; `datasets.load_dataset("outputs/hf")`
loads `default`):
- `default`: splits `train` and `validation` (the dev split), every field;
- `test`: the public test split, request fields only (labels withheld, as in outputs/splits/);
- `test_labels`: the withheld fields of the test rows, joined by `id` when grading.
A configuration's splits share one schema, which is why the public test split is its own.

Types are declared, never inferred: text fields are `string`; the JSON-valued fields (context,
tools, verification_payload, provenance) are canonical JSON text (`string`, null where the row has
null), because their shapes differ from row to row and a struct type would invent nulls. Files are
written with fixed options (zstd level 9, no page index, one row group), so the same rows give
the same bytes.
"""
from __future__ import annotations

import io
from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from domains.base import canonical_json
from pipeline.stages.hard_paraphrases import report_lines
from pipeline.harness.parquet import JSON_TEXT_FIELDS as JSON_FIELDS, SPLIT_FILES  # the reader's names: one place


def _columns(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, list]:
    out: dict[str, list] = {f: [] for f in fields}
    for r in rows:
        for f in fields:
            v = r.get(f)
            if f in JSON_FIELDS:
                v = None if v is None else canonical_json(v)
            elif v is not None and not isinstance(v, str):
                raise TypeError(f"row {r.get('id')}: field {f} is {type(v).__name__}, the dataset declares string")
            out[f].append(v)
    return out


def parquet_bytes(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> bytes:
    """One split as Parquet: every field `string` (nullable), in `fields` order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([pa.field(f, pa.string(), nullable=True) for f in fields])
    table = pa.Table.from_pydict(_columns(rows, fields), schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=9, row_group_size=max(len(rows), 1),
                   write_page_index=False, write_statistics=True, use_dictionary=True)
    return buf.getvalue()


def hf_licence(licences: Sequence[str]) -> list[str]:
    """Hub licence identifiers from the rows' licence strings ("CC-BY-4.0 (CacheEval curated)" ->
    "cc-by-4.0"); "other" for one the Hub does not name."""
    known = {"cc-by-4.0", "cc-by-sa-4.0", "cc-by-sa-3.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "apache-2.0", "mit",
             "cc0-1.0", "odc-by", "bsd-3-clause", "cc-by-3.0"}
    out = set()
    for text in licences:
        ident = text.split(" (")[0].strip().lower()
        out.add(ident if ident in known else "other")
    return sorted(out)


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


def languages() -> list[str]:
    """The languages of the requests: English and those of the multilingual domain's curated file."""
    from pipeline.core.config import read_yaml
    from pipeline.core.paths import CURATED

    data = read_yaml(CURATED / "multilingual.yaml")
    return ["en", *sorted(set(data["languages"]) - {"en"})]


def _yaml_header(n_rows: int, licences: list[str], fields: Sequence[str], public: Sequence[str],
                 label_fields: Sequence[str]) -> list[str]:
    def features(names: Sequence[str]) -> list[str]:
        return [f"    - name: {f}\n      dtype: string" for f in names]

    lic = licences[0] if len(licences) == 1 else "[" + ", ".join(licences) + "]"
    lines = ["---", "pretty_name: CacheEval", f"license: {lic}",
             "language:", *(f"- {code}" for code in languages()),
             "task_categories:", "- text-classification", "- sentence-similarity",
             "tags:", "- semantic-cache", "- llm", "- benchmark", "- false-hit-rate",
             "size_categories:", f"- {_size_category(n_rows)}",
             "configs:",
             "- config_name: default", "  default: true", "  data_files:",
             f"  - split: train\n    path: {SPLIT_FILES['train']}",
             f"  - split: validation\n    path: {SPLIT_FILES['validation']}",
             "- config_name: test", "  data_files:", f"  - split: test\n    path: {SPLIT_FILES['test']}",
             "- config_name: test_labels", "  data_files:", f"  - split: test\n    path: {SPLIT_FILES['test_labels']}",
             "dataset_info:",
             "- config_name: default", "  features:", *features(fields),
             "- config_name: test", "  features:", *features(public),
             "- config_name: test_labels", "  features:", *features(label_fields),
             "---"]
    return lines


# The stream protocol and the error-bound test, as the card describes them (static text).
STREAM_CARD = (
    "A cache that holds entries (`store(request, response)`, `lookup(request)`, `reset()`) can also be scored as "
    "it runs: `--protocol stream` serves it a seeded workload built from the rows, every row's A and B "
    "interleaved with the other rows' requests (`--gap`, `--orders` arrival orders), a miss answered and stored, "
    "with the harness's own capacity and eviction around it (`--capacity`, `--eviction lru|fifo|none`, through the "
    "cache's `evict(request)`). Every served response is judged by an oracle: right only when it answers an "
    "equivalent request (the identical one, or the other request of a HIT row; never a policy request). A cache "
    "may take `feedback(request, response, correct)` after each served hit and exploration, as online caches "
    "learn. The report gives FHR, hit rate, precision and the error rate on served hits along the stream, "
    "wrong-entry hits, answer instability across orders, per domain and per label.",
    "",
    "A cache may declare `error_bound` (δ, the largest share of its served hits that may be wrong). The stream "
    "report tests it in every order with the exact one-sided 95% Clopper–Pearson upper bound of the error rate, "
    "overall and per domain (holds, not shown, exceeded); `--check-bound` makes `cacheeval eval` exit 1 unless "
    "the bound holds. `outputs/reports/stream.md` scores GPTCache at a threshold sweep and an online cache after "
    "vCache at δ = 0.01, 0.02 and 0.05 this way.",
    "",
    "```",
    "cacheeval eval --bench outputs/cachebench.jsonl --cache-module my_store.py --cache-class MyStore "
    "--protocol stream --check-bound",
    "```",
)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(c) for c in r) + " |" for r in rows)]


def _fmt(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def card(rows: Sequence[Mapping[str, Any]], splits: Mapping[str, Sequence[Mapping[str, Any]]], fields: Sequence[str],
         public: Sequence[str], label_fields: Sequence[str], labels: Sequence[str], domains: Sequence[str],
         manifest_bits: Mapping[str, Any], baselines: Mapping[str, Mapping[str, Any]],
         references: Sequence[Mapping[str, Any]]) -> str:
    """The dataset card: the Hub's YAML header, then a body generated from this build."""
    n = len(rows)
    licences = Counter(r["licence"] for r in rows)
    split_rows = {k: len(v) for k, v in splits.items()}
    out = _yaml_header(n, hf_licence(list(licences)), fields, public, label_fields)
    hit = sum(r["binary_label"] == "HIT" for r in rows)
    out += ["", "# CacheEval", "",
            "CacheEval measures whether a semantic prompt cache decides HIT vs MISS correctly. Each row is a pair "
            "of requests: A was answered and stored earlier, B arrives now; a cache that serves A's stored response "
            "to B is right only when that response answers B. The headline metric is the **False-Hit Rate** "
            "(FHR = FP / (FP + TN)): how often a cache serves a wrong answer with confidence.", "",
            f"This build: profile `{manifest_bits['profile']}`, {n} rows ({hit} HIT, {n - hit} MISS) over "
            f"{len(domains)} domains and {len(labels)} labels; splits train {split_rows['train']}, validation "
            f"{split_rows['dev']}, test {split_rows['test']} (labels withheld).", "",
            "## Labels and the answer-determining token rule", "",
            "| label | binary | meaning |", "|---|---|---|",
            "| EQUIV | HIT | the same request up to surface form (case, spacing, punctuation) |",
            "| PARA_SAFE | HIT | a paraphrase whose answer is the same: every answer-determining token kept |",
            "| RELATED_UNSAFE | MISS | the same topic, a different answer (another entity, scope or constraint) |",
            "| ADVERSARIAL | MISS | a near-copy where one answer-determining token changed (a number, a variable, "
            "a language, a direction) |",
            "| UNRELATED | MISS | a different request |", "",
            "A token is answer-determining when changing it changes the correct response (\"Solve x + 2 = 8\" vs "
            "\"Solve a + 2 = 8\": the answer names the variable). Where `verification_method` is `policy_no_cache` "
            "(creative output that should vary, mutations, live or time-sensitive information, personalised answers "
            "across users) the binary label is MISS whatever the 5-class label says; otherwise binary is HIT exactly "
            "for EQUIV and PARA_SAFE.", "",
            "## Sampling matrix (rows per domain and label)", ""]
    cells = Counter((r["domain"], r["label"]) for r in rows)
    out += _table(["domain", *labels, "total"],
                  [[d, *(cells[(d, lab)] for lab in labels), sum(cells[(d, lab)] for lab in labels)] for d in domains])
    methods = Counter(r["construction_method"] for r in rows)
    verification = Counter(r["verification_method"] for r in rows)
    out += ["", "## Construction methods and verification", ""]
    out += _table(["construction method", "rows"], sorted(methods.items(), key=lambda kv: (-kv[1], kv[0])))
    out += [""]
    out += _table(["verification method", "rows"], sorted(verification.items(), key=lambda kv: (-kv[1], kv[0])))
    diff = Counter((r["label"], r["difficulty"]) for r in rows)
    out += ["", "## Difficulty", "",
            "Difficulty is how many of five embedders decide the row right at their calibrated thresholds (easy >= 4, "
            f"medium 2-3, hard <= 1); Cohen's kappa against a held-out embedder: {manifest_bits['kappa']}.", ""]
    out += _table(["label", "easy", "medium", "hard"],
                  [[lab, diff[(lab, "easy")], diff[(lab, "medium")], diff[(lab, "hard")]] for lab in labels])
    if "hard_paraphrases" in manifest_bits:
        out += ["", *report_lines(manifest_bits["hard_paraphrases"])]
    out += ["", "## Baselines and reference caches", ""]
    out += _table(["cache", "rows", "F1", "FHR", "precision", "recall"],
                  [[name, n, _fmt(m.get("f1")), _fmt(m.get("fhr")), _fmt(m.get("precision")), _fmt(m.get("recall"))]
                   for name, m in baselines.items()]
                  + [[r["configuration"], r["n"], _fmt(r["f1"]), _fmt(r["fhr"]), _fmt(r["precision"]), _fmt(r["recall"])]
                     for r in references])
    out += ["", "## Sources and licences", ""]
    from domains.corpora.licences import LICENCES

    commercial = {text: ok for text, ok in LICENCES.values()}
    sources = defaultdict(set)
    for r in rows:
        sources[r["licence"]].add(r["source"].split(":")[0] if r["source"].startswith("lm:") else r["source"])
    out += _table(["licence", "rows", "sources", "commercial use"],
                  [[lic, k, ", ".join(sorted(sources[lic])), "yes" if commercial.get(lic) else "no / not stated"]
                   for lic, k in sorted(licences.items())])
    free = sum(k for lic, k in licences.items() if commercial.get(lic))
    out += ["", f"The rows do not share one licence: each carries its source's (`licence` field), and the header's "
            f"`license` lists them all. {free} of {n} rows allow commercial use; the others come from corpora whose "
            "terms do not (ShareGPT states none, QQP and MRPC have their owners' terms) and are for research. "
            "`cacheeval build --commercial-only` builds the benchmark from the rows whose licence allows it only.", "",
            "## Load it", "",
            "```python",
            "from datasets import load_dataset",
            "bench = load_dataset(\"outputs/hf\")                     # train and validation, every field",
            "test = load_dataset(\"outputs/hf\", \"test\")            # the public test split (no labels)",
            "labels = load_dataset(\"outputs/hf\", \"test_labels\")   # withheld fields, joined by id",
            "```", "",
            "JSON-valued fields (`context_*`, `tools_*`, `verification_payload`, `provenance`) are JSON text: "
            "`json.loads` them.", "",
            "## Score a cache", "",
            "```",
            "cacheeval eval --bench outputs/cachebench.jsonl --cache-module my_cache.py --json report.json --max-fhr 0.05",
            "```", "",
            *STREAM_CARD, "",
            "## Citation", "",
            "```bibtex",
            "@misc{cacheeval2026,",
            "  title  = {CacheEval: a benchmark of false hits in semantic prompt caches},",
            "  author = {{CacheEval team}},",
            "  year   = {2026},",
            f"  note   = {{profile {manifest_bits['profile']}, {n} rows}}",
            "}",
            "```", ""]
    return "\n".join(out)


def hf_files(rows: Sequence[Mapping[str, Any]], splits: Mapping[str, Sequence[Mapping[str, Any]]],
             labels: Sequence[str], domains: Sequence[str], manifest_bits: Mapping[str, Any],
             baselines: Mapping[str, Mapping[str, Any]], references: Sequence[Mapping[str, Any]]) -> dict[str, bytes]:
    """hf/data/*.parquet and hf/README.md. `splits` holds the full rows of train, dev and test."""
    from pipeline.stages.assembly import TEST_PUBLIC_FIELDS

    rows = sorted(rows, key=lambda r: r["id"])
    splits = {k: sorted(v, key=lambda r: r["id"]) for k, v in splits.items()}
    fields = list(rows[0]) if rows else []
    public = list(TEST_PUBLIC_FIELDS)
    label_fields = ["id", *(f for f in fields if f not in public)]
    files = {f"hf/{SPLIT_FILES['train']}": parquet_bytes(splits["train"], fields),
             f"hf/{SPLIT_FILES['validation']}": parquet_bytes(splits["dev"], fields),
             f"hf/{SPLIT_FILES['test']}": parquet_bytes(splits["test"], public),
             f"hf/{SPLIT_FILES['test_labels']}": parquet_bytes(splits["test"], label_fields)}
    files["hf/README.md"] = card(rows, splits, fields, public, label_fields, labels, domains, manifest_bits,
                                 baselines, references).encode("utf-8")
    return files
