"""A cache that fails on every math request (it sees requests only: no domain, no id) and answers
exact equality elsewhere."""


def cache(pair):
    if pair.query_a.startswith("Solve") or "%" in pair.query_a:
        raise ZeroDivisionError(f"cannot compare {pair.query_a!r}")
    return pair.query_a == pair.query_b
