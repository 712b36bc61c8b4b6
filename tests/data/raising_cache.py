"""A cache that fails on every math row and answers exact equality elsewhere."""


def cache(row):
    if row.domain == "math":
        raise ZeroDivisionError(f"cannot compare {row.id}")
    return row.query_a == row.query_b
