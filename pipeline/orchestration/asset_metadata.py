"""What the asset pages of the Dagster UI show: Markdown tables built from an asset's value.

Row counts per (domain, label) cell, the construction-method mix, a preview of rows, headline
metrics as a table, a plot the asset wrote as an image inside the page (a PNG in a data: URI, which
the UI's Markdown renders), and for every asset that writes files the output folder, the profile
and each file's size and sha256. Pure functions of the rows and files; the assets call them
(assets/assembly.py and the other writers).

The UI shows a Markdown entry of under 1,000 characters in the metadata table itself, a longer one
(a plot, the row preview) behind its "[Show Markdown]" link.
"""
from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping

from dagster import MetadataValue

# verification_method says why a row is labelled as it is (an EQUIV row under policy_no_cache is a MISS).
PREVIEW_COLUMNS = ("id", "label", "binary_label", "verification_method", "difficulty", "construction_method",
                   "query_a", "query_b")
PREVIEW_CHARS = 70


def _cell(value: object) -> str:
    """A value as one Markdown table cell: one line, pipes escaped, long text shortened."""
    text = "" if value is None else " ".join(str(value).split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return text.replace("|", "\\|")


def table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def cells_table(cells: Iterable[tuple[str, str]], labels: Iterable[str],
                quota: Mapping[str, Mapping[str, int]] | None = None) -> MetadataValue:
    """Rows per (domain, label) cell, given one (domain, label) per row: a line per domain (sorted),
    a column per label, totals; with `quota` ({domain: {label: n}}) a short cell reads "n of quota"."""
    counts = Counter(cells)
    labels = list(labels)
    domains = sorted({d for d, _ in counts} | set(quota or {}))

    def shown(d: str, lab: str) -> str | int:
        n, want = counts.get((d, lab), 0), (quota or {}).get(d, {}).get(lab)
        return f"**{n} of {want}**" if want is not None and n != want else n

    body = [[d, *(shown(d, lab) for lab in labels), sum(counts.get((d, lab), 0) for lab in labels)] for d in domains]
    body.append(["**total**", *(sum(counts.get((d, lab), 0) for d in domains) for lab in labels),
                 sum(counts.values())])
    return MetadataValue.md(table(["domain", *labels, "rows"], body))


def method_mix(rows: list[dict]) -> MetadataValue:
    """Rows per construction method, with their share, most frequent first."""
    counts = Counter(r["construction_method"] for r in rows)
    total = len(rows) or 1
    body = [[m, n, f"{100 * n / total:.1f}%"] for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return MetadataValue.md(table(["construction method", "rows", "share"], body))


def rows_preview(rows: list[dict], per_domain: int = 1) -> MetadataValue:
    """The first rows (by id) of every domain, the long texts shortened."""
    shown: Counter = Counter()
    picked = []
    for r in sorted(rows, key=lambda r: r["id"]):
        if shown[r["domain"]] < per_domain:
            shown[r["domain"]] += 1
            picked.append([r.get(c) for c in PREVIEW_COLUMNS])
    return MetadataValue.md(table(PREVIEW_COLUMNS, picked))


def headline_table(headline: Mapping[str, Mapping[str, object]], first: str) -> MetadataValue:
    """{name: {metric: value}} as a Markdown table: a line per name (in order), a column per metric
    (those of the first line), None as "n/a"."""
    metrics = list(next(iter(headline.values()), {}))
    body = [[name, *("n/a" if values.get(m) is None else values.get(m) for m in metrics)]
            for name, values in headline.items()]
    return MetadataValue.md(table([first, *metrics], body))


def png_image(path: Path, alt: str) -> MetadataValue:
    """The PNG file at `path` as Markdown: an image whose source is the file's bytes (base64 in a
    data: URI), so the asset page shows the plot itself rather than the file's name."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return MetadataValue.md(f"![{alt}](data:image/png;base64,{data})\n")


SHA_SHOWN = 16  # hex digits of a file's sha256 in the files table (all 64 are in manifest.json)


def files_written(out_dir: Path, written: Mapping[str, str], profile: str) -> dict[str, object]:
    """Where an asset wrote, with which profile, and each file's size and sha256 (its first 16 hex
    digits: the whole 64 widened the metadata table past the page, clipping every value in it)."""
    body = [[f"`{rel}`", (out_dir / rel).stat().st_size if (out_dir / rel).is_file() else "missing",
             f"`{sha[:SHA_SHOWN]}…`"] for rel, sha in sorted(written.items())]
    return {"output_folder": MetadataValue.path(str(out_dir)), "profile": profile,
            "files": MetadataValue.md(table(["file", "bytes", "sha256 (start)"], body))}


def kappa(value: float, members: Iterable[str], held_out: str) -> dict[str, object]:
    """Cohen's kappa between the ensemble's difficulty and the held-out embedder's, both named."""
    members = list(members)
    return {"kappa_vs_held_out": round(value, 4), "held_out_embedder": held_out,
            "ensemble_members": ", ".join(members),
            "kappa_means": MetadataValue.md(
                f"Cohen's kappa = **{value:.3f}** between the difficulty voted by the {len(members)} ensemble "
                f"members ({', '.join(members)}) and the difficulty of the **held-out** embedder "
                f"**{held_out}**, which takes no part in the vote (pipeline/stages/difficulty.py).")}
