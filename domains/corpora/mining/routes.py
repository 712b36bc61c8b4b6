"""Which domain takes the pairs of each mining rule: read from the registered domains' specs
(`DomainSpec.mined_rules`), never from a table keyed by domain.

Mining sorts every pair into one rule (single.prompt_rule, single.candidate, followups):
- "creative": a creative request (write a poem, story, song...), under the creative policy;
- "time_sensitive": a request for live information (weather, news, prices, the time), under the
  time_sensitive policy;
- "explanatory": a pair of explanatory or how-to questions (single.explanatory) that is neither;
- "general": every other single-turn pair (an explanatory question paired with another prompt too);
- "follow_up": the same follow-up after two conversations, or at two points of one (followups.py).
A domain names the rules whose pairs it takes; it may also name a rule of its own with a prompt
test (`MinedRule(name, test)`): single-turn prompts that are neither creative nor time-sensitive
and that the test accepts (domains in matrix order, the first whose test accepts). A rule no
domain takes keeps its pairs out, counted as `no_domain_takes:<rule>` ("explanatory" pairs then
stay "general").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from pipeline.core.config import ConfigError

RULES = ("creative", "time_sensitive", "explanatory", "general", "follow_up")


@dataclass(frozen=True)
class Routes:
    """rule -> domain for every rule a registered domain takes, and the domains' own prompt rules
    (name, test) in matrix order."""

    domain: Mapping[str, str]
    own: tuple[tuple[str, Callable[[str], bool]], ...] = ()

    def takes(self, rule: str) -> str | None:
        """The domain that takes `rule`'s pairs, or None."""
        return self.domain.get(rule)


def routes() -> Routes:
    """The routes of the active domain registry (domains.use_registry), checked: every rule taken
    once, and a rule of a domain's own carries a test and a name that is not one of RULES."""
    from domains import all_domains

    taken: dict[str, str] = {}
    own: list[tuple[str, Callable[[str], bool]]] = []
    for spec in all_domains():
        for rule in spec.mined_rules:
            if rule.test is None and rule.name not in RULES:
                raise ConfigError(f"domain '{spec.name}': mined rule '{rule.name}' is not a mining rule "
                                  f"({', '.join(RULES)}). Name one of them, or give the rule a prompt test")
            if rule.test is not None and rule.name in RULES:
                raise ConfigError(f"domain '{spec.name}': its own mined rule '{rule.name}' has the name of a mining "
                                  "rule. Rename it")
            if rule.name in taken:
                raise ConfigError(f"domain '{spec.name}': mined rule '{rule.name}' is already taken by domain "
                                  f"'{taken[rule.name]}'. A rule routes to one domain")
            taken[rule.name] = spec.name
            if rule.test is not None:
                own.append((rule.name, rule.test))
    return Routes(taken, tuple(own))
