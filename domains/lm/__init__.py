"""LM-generated rows: paraphrases of curated seeds written by a language model.

Domain-agnostic: `generate.py` prompts the model and pairs kept rewordings, `rules.py` holds the
answer-token rules a rewording must pass. A domain takes part through `DomainSpec.lm` (its items,
domains.base.LMHooks) and imports this package; this package imports no domain.
"""


def read_prompt_file(path, rel: str):
    """The parsed YAML of a prompt file under configs/prompts/ (`rel`: its name in errors); its
    absence is a one-line InputError. yaml is loaded on first use: a build without a model never
    reads a prompt file."""
    import yaml

    from pipeline.core.errors import InputError

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{rel}: file not found. Restore it from git") from None


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
