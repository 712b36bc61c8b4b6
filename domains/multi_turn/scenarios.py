"""The multi_turn domain's scenario kinds: the conversation states (instances) built from each
record of sources/curated/multi_turn.yaml, with their answers computed or looked up from the facts
of the earlier turns, and each kind's one-token context perturbations. The domain module
(domains/multi_turn/__init__.py) reads the file, pairs the instances and registers the domain."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from pipeline.core.errors import InputError
from pipeline.core.paths import CURATED

SOURCE_FILE = CURATED / "multi_turn.yaml"
ORDINALS = ("first", "second", "third")


@dataclass(frozen=True)
class Instance:
    """One conversation state: its facts, alternative wordings of the earlier turns (same facts),
    and per question type the final-message templates and the answer for each target."""

    kind: str
    subcategory: str
    name: str
    facts: tuple[str, ...]
    contexts: tuple[tuple[Mapping[str, str], ...], ...]
    finals: Mapping[str, tuple[str, ...]]          # qtype -> templates with {t}
    answers: Mapping[str, Mapping[str, str]]       # qtype -> target -> answer


@dataclass(frozen=True)
class Perturbed:
    """An instance whose earlier turns differ from a seed by one operator-changed token."""

    seed: Instance
    variant: Instance
    operator: str
    params: Mapping[str, Any]


def _turns(user: str, assistant: str) -> tuple[Mapping[str, str], ...]:
    return ({"role": "user", "content": user}, {"role": "assistant", "content": assistant})


def _num(x: float, decimals: int) -> str:
    s = f"{round(x, decimals):.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def _answer_text(value: Any) -> str:
    """A curated answer: a string, or a list of standard forms (the first is the reference). The
    expected answer text names every accepted form, e.g. "Oceania (also: Australia)"."""
    forms = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return forms[0] if len(forms) == 1 else f"{forms[0]} (also: {', '.join(forms[1:])})"


def _first(value: Any) -> str:
    """The reference form of a curated answer, for use inside the earlier turns."""
    return str(value[0]) if isinstance(value, list) else str(value)


def _require(rec: Mapping, keys: Iterable[str], where: str) -> None:
    missing = [k for k in keys if k not in rec]
    if missing:
        raise InputError(f"{SOURCE_FILE}:{where}: missing key(s) {', '.join(missing)}. Add them to the record")


# ---- scenario kinds: each returns its instances and its one-token context perturbations ----

def _conversions(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "values", "contexts", "targets", "finals"], f"conversions.{rec.get('id')}")

    def make(v: float) -> Instance:
        answers = {t: f"{_num(v * float(spec['factor']) + float(spec['offset']), int(spec['decimals']))} {spec['unit']}"
                   for t, spec in sorted(rec["targets"].items())}
        ctxs = tuple(_turns(u.format(v=v), a.format(v=v)) for u, a in rec["contexts"])
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={v}", (f"{rec['id']} value = {v}",),
                        ctxs, {"convert": tuple(rec["finals"])}, {"convert": answers})

    values = list(rec["values"])
    insts = [make(v) for v in values]
    perts = [Perturbed(insts[i], insts[(i + 1) % len(insts)], "context_value_swap",
                       {"from": values[i], "to": values[(i + 1) % len(values)]}) for i in range(len(insts))]
    return insts, perts


def _ordinal_lists(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "asks", "attribute", "finals", "items", "lists"], f"ordinal_lists.{rec.get('id')}")
    items: Mapping[str, str] = rec["items"]

    def make(lst: list[str]) -> Instance:
        for it in lst:
            if it not in items:
                raise InputError(f"{SOURCE_FILE}:ordinal_lists.{rec['id']}: list item '{it}' has no entry in items. Add it")
        numbered = "\n".join(f"{i + 1}. {it}" for i, it in enumerate(lst))
        inline = f"Here are three: {lst[0]}, {lst[1]} and {lst[2]}."
        ctxs = (_turns(rec["asks"][0], numbered), _turns(rec["asks"][1], inline))
        answers = {ORDINALS[i]: items[it] for i, it in enumerate(lst)}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={'|'.join(lst)}",
                        (f"list = {'; '.join(lst)}",), ctxs, {"ordinal": tuple(rec["finals"])}, {"ordinal": answers})

    insts, perts = [], []
    pool = sorted(items)
    for k, lst in enumerate(rec["lists"]):
        inst = make(list(lst))
        insts.append(inst)
        # Swap the item at one position for one outside the list whose attribute differs.
        pos = k % 3
        for other in pool[k:] + pool[:k]:
            if other not in lst and items[other] != items[lst[pos]]:
                new = list(lst)
                new[pos] = other
                perts.append(Perturbed(inst, make(new), "context_item_swap",
                                       {"position": ORDINALS[pos], "from": lst[pos], "to": other}))
                break
    return insts, perts


def _entity_followups(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "contexts", "questions", "entities", "confusable"], f"entity_followups.{rec.get('id')}")
    ents = rec["entities"]

    def make(e: str) -> Instance:
        ctxs = tuple(_turns(u.format(e=e), a.format(e=e)) for u, a in rec["contexts"])
        finals = {q: tuple(ts) for q, ts in sorted(rec["questions"].items())}
        answers = {q: {"": _answer_text(ents[e][q])} for q in finals}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={e}", (f"country = {e}",), ctxs, finals, answers)

    insts = {e: make(e) for e in sorted(ents)}
    perts = []
    for a, b in rec["confusable"]:
        if a not in ents or b not in ents:
            raise InputError(f"{SOURCE_FILE}:entity_followups.{rec['id']}: confusable pair {a}/{b} not in entities. Add it")
        perts.append(Perturbed(insts[a], insts[b], "context_entity_swap", {"from": a, "to": b}))
        perts.append(Perturbed(insts[b], insts[a], "context_entity_swap", {"from": b, "to": a}))
    return [insts[e] for e in sorted(insts)], perts


def _phrase_followups(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "contexts", "finals", "languages", "phrases"], f"phrase_followups.{rec.get('id')}")
    phrases = rec["phrases"]

    def make(p: str) -> Instance:
        tr = {lang: _first(v) for lang, v in phrases[p].items()}
        ctxs = tuple(_turns(u.format(p=p, **tr), a.format(p=p, **tr)) for u, a in rec["contexts"])
        answers = {lang: _answer_text(phrases[p][lang]) for lang in rec["languages"]}
        return Instance(rec["id"], rec["subcategory"], f"{rec['id']}={p}", (f"phrase = {p}",), ctxs,
                        {"translate": tuple(rec["finals"])}, {"translate": answers})

    names = list(phrases)
    insts = [make(p) for p in names]
    perts = [Perturbed(insts[i], insts[(i + 1) % len(insts)], "context_phrase_swap",
                       {"from": names[i], "to": names[(i + 1) % len(names)]}) for i in range(len(insts))]
    return insts, perts


def _bill_splits(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "values", "contexts", "finals"], "bill_splits")

    def make(n: int, t: int) -> Instance:
        ctxs = tuple(_turns(u.format(n=n, t=t), a.format(n=n, t=t)) for u, a in rec["contexts"])
        return Instance(rec["id"], rec["subcategory"], f"bill={n}/{t}", (f"people = {n}", f"total = ${t}"), ctxs,
                        {"share": tuple(rec["finals"])}, {"share": {"": f"${t / n:.2f} per person"}})

    insts, perts = [], []
    for n, t in rec["values"]:
        inst = make(int(n), int(t))
        insts.append(inst)
        perts.append(Perturbed(inst, make(int(n) + 1, int(t)), "context_value_swap", {"slot": "people", "from": n, "to": n + 1}))
    return insts, perts


def _recipe_scalings(rec: Mapping) -> tuple[list[Instance], list[Perturbed]]:
    _require(rec, ["id", "subcategory", "recipes", "targets", "contexts", "finals"], "recipe_scalings")

    def make(i: str, g: int, s: int) -> Instance:
        ctxs = tuple(_turns(u.format(g=g, s=s, i=i), a.format(g=g, s=s, i=i)) for u, a in rec["contexts"])
        finals = tuple(f.replace("{i}", i) for f in rec["finals"])
        answers = {str(t): f"{_num(g * t / s, 1)} g of {i}" for t in rec["targets"] if t != s}
        return Instance(rec["id"], rec["subcategory"], f"recipe={i}/{g}/{s}", (f"{i} = {g} g", f"servings = {s}"),
                        ctxs, {"scale": finals}, {"scale": answers})

    insts, perts = [], []
    ratios: dict[float, str] = {}
    for k, (ing, g, s) in enumerate(rec["recipes"]):
        # Recipes with one grams-per-serving ratio scale to the same amounts, so a pair of them
        # would differ in the earlier turns only, never in the answer's number.
        ratio = round(float(g) / float(s), 6)
        if ratio in ratios:
            raise InputError(f"{SOURCE_FILE}:recipe_scalings.recipes[{k}]: {g} g for {s} servings has the same "
                             f"ratio as {ratios[ratio]}. Give every recipe its own grams per serving")
        ratios[ratio] = f"{ing} {g} g/{s}"
        inst = make(str(ing), int(g), int(s))
        insts.append(inst)
        perts.append(Perturbed(inst, make(ing, int(g) + 50, int(s)), "context_value_swap", {"slot": "grams", "from": g, "to": g + 50}))
    return insts, perts


KIND_BUILDERS: Mapping[str, Callable[[Mapping], tuple[list[Instance], list[Perturbed]]]] = {
    "conversions": _conversions, "ordinal_lists": _ordinal_lists, "entity_followups": _entity_followups,
    "phrase_followups": _phrase_followups,
}
