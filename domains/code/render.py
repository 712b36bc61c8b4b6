"""Rendering a code request: a `Spec` gives its query text and its reference solution.

The query is a curated frame (plain, or with the function stub attached) filled with the
language, signature and behaviour clause; surface operations change only the frame's own words,
never identifiers or the clause, so an EQUIV pair keeps the same reference solution.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from domains.code.catalog import curated, task, variant

SURFACE_OPS = ("lower", "no_period", "spaces", "colon", "newline")


@dataclass(frozen=True)
class Spec:
    """One request: everything its query, answer and tests are rendered from."""

    task: str
    variant: str
    lang: str
    frame: str          # frame id (a stub frame when stub is True)
    does: int           # index of the behaviour clause
    stub: bool = False
    name: str | None = None          # the function name, when renamed
    surface: tuple[str, ...] = ()    # surface operations (EQUIV side)

    @property
    def fn(self) -> str:
        """The function name the request asks for."""
        return self.name or task(self.task)["name"]

    @property
    def template_id(self) -> str:
        """`task/variant/lang/frame/d<clause>`: recorded in provenance, enough to rebuild the Spec."""
        return f"{self.task}/{self.variant}/{self.lang}/{self.frame}/d{self.does}"


def _frame_text(spec: Spec) -> str:
    frames = curated()["stub_frames" if spec.stub else "frames"]
    return next(f["text"] for f in frames if f["id"] == spec.frame)


def _apply_surface(frame: str, lang_name: str, ops: tuple[str, ...]) -> tuple[str, str]:
    """Surface changes touch only the frame's own words, never identifiers or the clause."""
    for op in ops:
        if op == "lower":
            frame, lang_name = frame.lower(), lang_name.lower()
        elif op == "no_period":
            frame = frame[:-1] if frame.endswith(".") else frame
        elif op == "spaces":
            frame = "  " + frame.replace(" {sig}", "   {sig}").replace("{lang} ", "{lang}  ") + " "
        elif op == "colon":
            # Any run of spaces: the "spaces" op may already have widened the gap before {sig}.
            frame = re.sub(r"function( +)\{sig\}", r"function:\1{sig}", frame)
        elif op == "newline":
            # Either case: the "lower" op may already have turned "It" into "it".
            frame = re.sub(r"([.?]) ([Ii]t )", "\\1\n\\2", frame)
    return frame, lang_name


def surface_steps_effective(spec: Spec, ops: tuple[str, ...]) -> bool:
    """True when each of `ops`, applied in order, changes the query, so that a rationale listing
    `ops` names exactly the changes made (no op silently undone or blocked by an earlier one)."""
    frame, lang = _frame_text(spec), curated()["languages"][spec.lang]["display"]
    for op in ops:
        nxt = _apply_surface(frame, lang, (op,))
        if nxt == (frame, lang):
            return False
        frame, lang = nxt
    return True


def surface_ops_for(spec: Spec) -> list[str]:
    """The surface operations that change this spec's frame."""
    base = _frame_text(spec)
    lang = curated()["languages"][spec.lang]["display"]
    return [op for op in SURFACE_OPS if _apply_surface(base, lang, (op,)) != (base, lang)]


def render_query(spec: Spec) -> str:
    """The request text of `spec`."""
    t = task(spec.task)
    langs = curated()["languages"][spec.lang]
    frame, lang_name = _apply_surface(_frame_text(spec), langs["display"], spec.surface)
    does = t["does"][spec.does]
    if t.get("slot"):
        does = does.replace("{" + t["slot"] + "}", spec.variant)
    sig = f"{spec.fn}({', '.join(t['params'])})"
    if spec.lang == "python":
        stub = f"def {sig}:\n    ..."
    else:
        stub = f"function {sig} {{\n  // TODO\n}}"
    values = {"lang": lang_name, "sig": sig, "does": does, "fence": langs["fence"], "stub": stub}
    return re.sub(r"\{(lang|sig|does|fence|stub)\}", lambda m: values[m.group(1)], frame)


def rename_identifier(code: str, lang: str, old: str, new: str) -> str:
    """Rename identifier `old` to `new` in code. Refuses (ValueError) when `old` occurs inside a
    string literal, where a textual rename could not be trusted."""
    if lang == "python":
        strings = [tok.string for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                   if tok.type == tokenize.STRING]
    else:
        strings = re.findall(r'"[^"\n]*"|\'[^\'\n]*\'|`[^`]*`', code)
    if any(re.search(rf"\b{re.escape(old)}\b", s) for s in strings):
        raise ValueError(f"{old!r} occurs in a string literal")
    return re.sub(rf"\b{re.escape(old)}\b", new, code)


def render_answer(spec: Spec) -> str:
    """The reference solution of `spec` (the function renamed when the spec renames it)."""
    code = variant(spec.task, spec.variant)[spec.lang].rstrip() + "\n"
    base = task(spec.task)["name"]
    return rename_identifier(code, spec.lang, base, spec.fn) if spec.fn != base else code
