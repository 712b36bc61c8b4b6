"""LM-generated rows: paraphrases of curated seeds written by a language model.

Domain-agnostic: `generate.py` prompts the model and pairs kept rewordings, `rules.py` holds the
answer-token rules a rewording must pass. A domain takes part through `DomainSpec.lm` (its items,
domains.base.LMHooks) and imports this package; this package imports no domain.
"""


def read_prompt_file(path, rel: str):
    """The parsed YAML of a prompt file under configs/prompts/ (`rel`: its name in errors), read by
    the project's one YAML loader; its absence or bad syntax is a one-line InputError. Read on first
    use: a build without a model never reads a prompt file."""
    from pipeline.core.config import ConfigError, read_yaml
    from pipeline.core.errors import InputError

    try:
        return read_yaml(path, rel, restore="Restore it from git")
    except ConfigError as exc:
        raise InputError(str(exc).rstrip(".")) from None


def section_llm(llm, section, where: str):
    """The model a prompt section asks (its optional `provider:`, an entry of configs/llm.yaml) over
    the run's response cache and mode, or the run's own model; `where` names the section in errors."""
    from pipeline.core.errors import InputError

    name = section.get("provider")
    if name is None or not hasattr(llm, "named"):   # a test double answers every section itself
        return llm
    try:
        return llm.named(str(name))
    except InputError as exc:
        raise InputError(f"{where}.provider: {str(exc).rstrip('.')}. Name an entry of configs/llm.yaml") from None


def check_sections(data, rel: str, required: set, optional: set, placeholders: tuple, example: tuple) -> None:
    """Check each section under a prompt file's `domains` (`rel`: the file's name in errors): the
    `required` keys and only `optional` ones besides, each of `placeholders` in its user message,
    and examples that are lists of `len(example)` items (`example` names them in the error)."""
    from pipeline.core.errors import InputError

    for name, spec in sorted(data["domains"].items()):
        where = f"{rel}:domains.{name}"
        if not isinstance(spec, dict) or not required <= set(spec) or set(spec) - required - optional:
            raise InputError(f"{where}: needs {', '.join(sorted(required))} (and optionally "
                             f"{', '.join(sorted(optional))}). Fix the keys")
        if any(p not in spec["user"] for p in placeholders):
            plural = "s" if len(placeholders) > 1 else ""
            raise InputError(f"{where}.user: needs the {' and '.join(placeholders)} placeholder{plural}. Add "
                             f"{'them' if plural else 'it'}")
        if any(not isinstance(e, list) or len(e) != len(example) for e in spec["examples"]):
            raise InputError(f"{where}.examples: each example is [{', '.join(example)}]. Fix it")


def section_for(data, rel: str, domain: str, hooks: str, required: set) -> dict:
    """The section for `domain` of a prompt file, whose spec has `hooks` hooks ("LM", "edit",
    "follow-up"); a missing one is a one-line error naming the keys it needs."""
    from pipeline.core.errors import InputError

    if domain not in data["domains"]:
        raise InputError(f"{rel}:domains: no section for domain '{domain}', whose spec has {hooks} hooks. "
                         f"Add one ({', '.join(sorted(required))})")
    return data["domains"][domain]
