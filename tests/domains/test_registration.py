"""Extension by registration: a domain is its module, its curated source and its matrix row.

The project's registry is found by discovery and ordered by the sampling matrix; a domain added
from a temporary package (module + curated YAML + one matrix row, nothing else) generates,
verifies, is selected and gets ids and a row schema of its own; with a datasets dir it also takes
corpus rows (the corpus feed its spec declares) and mined rows (the mining rule its spec declares),
still without a change anywhere else; a matrix row without a domain and a domain without a row
each stop loading with a one-line error naming the domain.
"""
from __future__ import annotations

import json
import shutil
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import domains
from domains import DomainRegistry, all_domains, domain_names, get_domain, use_registry
from domains.base import LABELS, DomainSpec
from domains.check import generate_verified
from pipeline.core.config import SAMPLING_FILE, ConfigError, load_profiles, matrix_domains
from pipeline.core.errors import CacheEvalError
from pipeline.core.paths import FIXTURES
from pipeline.core.registry import UnknownNameError
from pipeline.harness.contract import validate_rows
from pipeline.stages.assembly import assemble_rows
from pipeline.stages.selection import select

# ------------------------------------------------------------------ the project's registry


def test_the_registry_is_the_matrix_rows_in_order():
    names = domain_names()
    assert names == list(matrix_domains()) and len(names) >= 10
    assert [s.name for s in all_domains()] == names
    assert all(isinstance(get_domain(n), DomainSpec) for n in names)
    # The support modules and packages define no SPEC and are not domains.
    found = DomainRegistry().discover()
    assert sorted(found) == sorted(names)
    assert not {"base", "check", "curated", "families", "text", "corpora", "lm", "verify"} & set(found)


def test_an_unknown_domain_suggests_close_names():
    with pytest.raises(UnknownNameError, match=r"Unknown domain 'maths'\. Did you mean 'math'\?"):
        get_domain("maths")


# ------------------------------------------------------------------ a domain added from outside

MODULE = '''
"""astronomy: questions about the sky, from a fact table (a domain added by a test)."""
from __future__ import annotations

import re
from pathlib import Path

from domains.base import Candidate, CorpusFeed, DomainSpec, GenContext, MinedRule, Provenance
from domains.corpora.feeds import corpus_rows
from domains.corpora.mining import real_traffic_rows
from domains.curated import read_curated

DOMAIN = "astronomy"
SOURCE = Path(__file__).with_name("astronomy.yaml")
SKY = re.compile(r"\\b(planet|planets|moon|moons|comet|comets|telescope|galaxy)\\b", re.IGNORECASE)


def policy(c: Candidate) -> str | None:
    return "time_sensitive" if "tonight" in (c.query_a + " " + c.query_b).lower() else None


def _pair(label, a, qa, b, qb, why):
    c = Candidate(
        domain=DOMAIN, subcategory=a["object"], label=label, query_a=qa, query_b=qb,
        expected_answer_a=a["answer"], expected_answer_b=b["answer"], rationale=why,
        verification_method="alias_exact_match",
        verification_payload={"aliases_a": [a["answer"]], "aliases_b": [b["answer"]]},
        construction_method="curated", source="curated",
        real_world_grounding="A stargazer asks an assistant about the night sky.",
        provenance=Provenance(generator="astronomy.curated", generator_version="1",
                              source_file="astronomy.yaml", source_record=f"{a['id']}|{b['id']}"))
    return c.under_policy(policy(c))


def curated(ctx: GenContext):
    facts = read_curated(SOURCE, ("facts",))["facts"]
    for f in facts:
        p0, p1 = f["phrasings"]
        yield _pair("EQUIV", f, p0, f, p0.lower().rstrip("?"), "Same question, other case.")
        yield _pair("PARA_SAFE", f, p0, f, p1, "Two phrasings of one fact.")
        for g in facts:
            if f["id"] >= g["id"]:
                continue
            if f["object"] == g["object"]:
                yield _pair("RELATED_UNSAFE", f, p0, g, g["phrasings"][1], "Same object, other attribute.")
            elif f["attribute"] == g["attribute"]:
                yield _pair("ADVERSARIAL", f, p0, g, g["phrasings"][0], "One object swapped.")
            else:
                yield _pair("UNRELATED", f, p1, g, g["phrasings"][0], "Different object and attribute.")


SPEC = DomainSpec(name=DOMAIN, description="Questions about the night sky.",
                  generators={"curated": curated, "existing_benchmark": corpus_rows("existing_benchmark"),
                              "real_traffic_mined": real_traffic_rows},
                  verifier="alias_exact_match", policy=policy,
                  # with a datasets dir: QQP pairs (a share of its need), and mined prompts about the sky
                  corpus_feeds={"existing_benchmark": (CorpusFeed(("qqp",), {"PARA_SAFE": 0.5, "RELATED_UNSAFE": 0.5,
                                                                             "ADVERSARIAL": 0.5}),)},
                  mined_rules=(MinedRule("sky_question", test=lambda text: bool(SKY.search(text))),))
'''

TABLE = [("Mars", ("2", "red", "4th")), ("Venus", ("0", "yellowish white", "2nd")),
         ("Saturn", ("146", "pale gold", "6th"))]
FACTS = [(obj, attr, answer) for obj, answers in TABLE for attr, answer in zip(("moons", "colour", "order"), answers)]
PHRASINGS = {"moons": ("How many moons does {o} have?", "What is the number of moons of {o}?"),
             "colour": ("What colour is {o}?", "Which colour does {o} show in a telescope?"),
             "order": ("Which planet from the sun is {o}?", "Where does {o} sit in order from the sun?")}


def _curated_yaml() -> str:
    lines = ["facts:"]
    for i, (obj, attr, answer) in enumerate(FACTS):
        p0, p1 = (p.format(o=obj) for p in PHRASINGS[attr])
        if (obj, attr) == ("Mars", "colour"):
            p1 = "What colour is Mars tonight?"   # a question about the present: under the policy
        lines += [f"  - id: f{i}", f"    object: {obj}", f"    attribute: {attr}", f'    answer: "{answer}"',
                  f'    phrasings: ["{p0}", "{p1}"]']
    return "\n".join(lines) + "\n"


@pytest.fixture
def extra(tmp_path, monkeypatch):
    """A package outside the project holding one domain module and its curated file, importable
    under a fresh name, and a sampling file with the project's rows plus the new domain's."""
    package = f"extra_domains_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Domains added by a test."""\n', encoding="utf-8")
    (folder / "astronomy.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    (folder / "astronomy.yaml").write_text(_curated_yaml(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package, folder
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def _sampling(tmp_path: Path, domain: str) -> Path:
    """The project's sampling file with a row of 40 per label for `domain` appended to the v1.1
    matrix, and v1.1's split sizes grown by the 200 rows it adds (the derived profiles follow)."""
    text = SAMPLING_FILE.read_text(encoding="utf-8")
    row, splits = "      multilingual:   [30, 20, 30, 40, 30]\n", "splits: {train: 1000, dev: 500, test: 500}"
    assert row in text and splits in text
    text = text.replace(row, row + f"      {domain}: [40, 40, 40, 40, 40]\n")
    path = tmp_path / "sampling.yaml"
    path.write_text(text.replace(splits, "splits: {train: 1100, dev: 550, test: 550}"), encoding="utf-8")
    return path


def test_a_new_domain_is_its_module_curated_file_and_matrix_row(extra, tmp_path):
    package, _ = extra
    registry = DomainRegistry(("domains", package), _sampling(tmp_path, "astronomy"))
    with use_registry(registry):
        names = domain_names()
        assert names[-1] == "astronomy" and names[:-1] == list(matrix_domains())
        spec = get_domain("astronomy")
        smoke = load_profiles(registry.sampling)["smoke"]
        assert smoke.matrix["astronomy"] == {lab: 5 for lab in LABELS}

        # generate + verify: every label is offered, the policy row verifies under the domain's policy
        verified = {d: [] for d in names}
        for d in names:
            rep = generate_verified(d, dict(smoke.matrix[d]), profile="smoke")
            verified[d] = [(c, rep.outcomes[c.key]) for lab in LABELS for c in rep.kept[lab]]
        mine = [c for c, _ in verified["astronomy"]]
        assert {c.label for c in mine} == set(LABELS) and all(len([c for c in mine if c.label == lab]) >= 5
                                                              for lab in LABELS)
        assert any(c.verification_method == "policy_no_cache" and spec.policy(c) == "time_sensitive" for c in mine)

        # selection: the new domain's cells are full, its rows numbered cb-astronomy-NNNN and split
        sel = select(smoke, verified)
        assert not sel.shortfalls
        rows = [r for r in sel.rows if r.candidate.domain == "astronomy"]
        assert len(rows) == 25 and sorted(r.id for r in rows) == [f"cb-astronomy-{i:04d}" for i in range(1, 26)]
        assert {r.split for r in sel.rows} == {"train", "dev", "test"}

        # the row schema is derived from the registry: the new domain and its ids are valid rows
        n = len(sel.rows)
        assembled = assemble_rows(sel.rows, {"difficulty": ["easy"] * n, "votes": [{}] * n})
        numbered = [(i + 1, r) for i, r in enumerate(assembled)]
        assert validate_rows(numbered, "b.jsonl", domains=domain_names()) == []
    # outside the block the project's registry is back, and it does not know the new domain
    assert "astronomy" not in domain_names()
    errors = validate_rows(numbered, "b.jsonl", domains=domain_names())
    assert errors and all("astronomy" in e for e in errors)


# Real-traffic prompts written for this test, in a ShareGPT file beside the fixtures: two pairs about the
# sky (an EQUIV surface variant and an ADVERSARIAL number change) and one other pair.
SKY_PAIRS = [("How many moons does Neptune have?", "how many moons does neptune have"),
             ("List 3 facts about the planet Mars.", "List 5 facts about the planet Mars."),
             ("Give me 3 tips for sleeping better.", "Give me 5 tips for sleeping better.")]


def _datasets(root: Path) -> Path:
    """A datasets dir built from the fixtures: QQP, and ShareGPT plus the SKY_PAIRS conversations."""
    shutil.copytree(FIXTURES / "qqp", root / "qqp")
    shutil.copytree(FIXTURES / "sharegpt", root / "sharegpt")
    rows = [{"id": f"sky{k}{side}_0", "conversations": [{"from": "human", "value": text}]}
            for k, pair in enumerate(SKY_PAIRS) for side, text in zip("ab", pair)]
    (root / "sharegpt" / "sky.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def test_a_new_domain_takes_corpus_and_mined_rows_from_its_spec(extra, tmp_path):
    # The same three files: the temporary domain's spec declares its corpus feed (QQP, with its
    # shares) and its own mining rule (prompts about the sky); the corpora and mining code read them.
    from domains.corpora import mining
    from sources.datasets_dir import DatasetsDir

    package, _ = extra
    ds = DatasetsDir(_datasets(tmp_path / "ds"))
    cache = tmp_path / "cache"
    project_mined = mining.mine(ds, cache_dir=cache)            # the project's registry: no sky rule
    registry = DomainRegistry(("domains", package), _sampling(tmp_path, "astronomy"))
    with use_registry(registry):
        smoke = load_profiles(registry.sampling)["smoke"]
        mined = mining.mine(ds, cache_dir=cache)
        # (pairs of distinct openings, UNRELATED and RELATED_UNSAFE, are drawn within each domain's prompts, so a
        # new domain that takes prompts changes them: left out of the comparisons below)
        near = ("unrelated", "related_topic")
        sky = {c.provenance.source_record: c for c in mined.of("astronomy") if c.provenance.template_id not in near}
        assert sorted(sky) == ["sky0a_0#0|sky0b_0#0", "sky1a_0#0|sky1b_0#0"]
        assert {c.label for c in sky.values()} == {"EQUIV", "ADVERSARIAL"}
        assert all(c.provenance.generator == "astronomy.real_traffic_mined" for c in sky.values())
        # every other mined pair routes as it does without the new domain
        rest = [c.key for c in mined.candidates if c.domain != "astronomy" and c.provenance.template_id not in near]
        assert rest == [c.key for c in project_mined.candidates
                        if c.provenance.source_record not in sky and c.provenance.template_id not in near]

        rep = generate_verified("astronomy", dict(smoke.matrix["astronomy"]), datasets=ds, profile="smoke",
                                mined=mined)
        kept = [c for lab in LABELS for c in rep.kept[lab]]
        by_method = {m: [c for c in kept if c.construction_method == m] for m in
                     ("curated", "existing_benchmark", "real_traffic_mined")}
        assert all(by_method.values()), {m: len(cs) for m, cs in by_method.items()}
        assert {c.source for c in by_method["existing_benchmark"]} == {"qqp"}
        assert {c.provenance.source_record for c in by_method["real_traffic_mined"]
                if c.provenance.template_id not in near} == set(sky)
        # the feed's shares cap the corpus rows: ceil(0.5 * 5) per label it names, none for the others
        per_label = {lab: sum(c.label == lab for c in by_method["existing_benchmark"]) for lab in LABELS}
        assert all(n <= 3 for n in per_label.values()) and per_label["EQUIV"] == per_label["UNRELATED"] == 0
        # qa_open takes the same QQP mapping with its own shares, unchanged by the new domain
        qa_open = generate_verified("qa_open", dict(smoke.matrix["qa_open"]), datasets=ds, profile="smoke")
    before = generate_verified("qa_open", dict(smoke.matrix["qa_open"]), datasets=ds, profile="smoke")
    assert {lab: [c.key for c in cs] for lab, cs in qa_open.kept.items()} == \
        {lab: [c.key for c in cs] for lab, cs in before.kept.items()}
    # outside the block the sky pairs are the project's own rules' again (conversational)
    assert {c.domain for c in project_mined.candidates if c.provenance.source_record in sky} == {"conversational"}


def _one_line_config_error(registry: DomainRegistry) -> str:
    with use_registry(registry):
        with pytest.raises(ConfigError) as err:
            domain_names()
    message = str(err.value)
    assert isinstance(err.value, CacheEvalError) and "\n" not in message
    return message


def test_a_matrix_row_without_a_domain_fails_at_load(tmp_path):
    message = _one_line_config_error(DomainRegistry(("domains",), _sampling(tmp_path, "astrology")))
    assert message == (f"{tmp_path / 'sampling.yaml'}: the matrix has a row for domain 'astrology', but no module "
                       "under domains/ defines it. Add domains/astrology.py exposing SPEC, or remove the row.")


def test_a_domain_without_a_matrix_row_fails_at_load(extra):
    package, folder = extra
    message = _one_line_config_error(DomainRegistry(("domains", package)))
    assert message == (f"configs/sampling.yaml: domain 'astronomy' ({folder / 'astronomy.py'}) has no row in the "
                       "matrix. Add a row 'astronomy: [...]' with one quota per label.")


def test_a_spec_named_unlike_its_module_fails_at_load(extra, tmp_path):
    package, folder = extra
    (folder / "stars.py").write_text((folder / "astronomy.py").read_text().replace('DOMAIN = "astronomy"',
                                                                                   'DOMAIN = "starz"'))
    message = _one_line_config_error(DomainRegistry(("domains", package), _sampling(tmp_path, "astronomy")))
    assert message == (f"{folder / 'stars.py'}: SPEC is named 'starz' in module 'stars'. "
                       "Name the module after its domain.")


def test_the_project_registry_is_untouched_by_the_tests():
    assert domains._active.packages == ("domains",) and domains._active.sampling == SAMPLING_FILE
