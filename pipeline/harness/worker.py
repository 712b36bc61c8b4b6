"""The worker process that runs a user's cache apart from the scorer (`python -m pipeline.harness.worker`).

It receives requests only and returns verdicts; it never sees a row, a label, the benchmark file or
the scorer's memory (pipeline.harness.isolated starts it, in bubblewrap where available). Protocol:
JSON lines on its standard input and output, which it takes for itself at start (anything the cache
prints goes to standard error):

  in   {"load": {"module": M, "class": C or null}}
  out  {"hello": {"name": default name, "store_lookup": bool, "implementation": identity or null}}
       or {"error": one line} (the module cannot be loaded)
  in   {"run": {"protocol": "pair"|"isolated"|"shared", "start": i, "n": n}}
  in   shared: n lines {"a": [query, system_prompt, context, tools]} (and "x": {user, tenant, tool_choice}
       and "s": the status of its stored response, when given), every pair's A, each stored as it comes
  out  (isolated, shared) {"prepared": true} (shared: every A stored) or {"store_failed": one line}
  in   a line {"p": Pair.to_dict()} per position from `start`, read as the cache decides (the scorer
       writes them ahead of the decisions, a window at a time: nobody holds every request)
  out  per position from `start`: {"i": i, "d": [is_hit, confidence, ms, tier, cost, own_ms], "e": error
       text or null, "s": served or null}, and {"done": ProtocolRun.meta() or null}
  in   {"quit": true} or end of input: exit.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any


def _channel() -> tuple[Any, Any]:
    """The protocol's own copies of stdin and stdout; fd 1 then goes to stderr and fd 0 to /dev/null,
    so a cache that prints cannot break the protocol by accident."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    return proto_in, proto_out


def main() -> int:
    proto_in, proto_out = _channel()

    def send(obj: Any) -> None:
        proto_out.write(json.dumps(obj, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n")
        proto_out.flush()

    def receive() -> Any:
        line = proto_in.readline()
        return json.loads(line) if line.strip() else None

    from pipeline.core.errors import CacheEvalError
    from pipeline.harness.stateful import is_store_lookup
    from pipeline.harness.user_cache import load_cache

    msg = receive()
    if not msg or "load" not in msg:
        return 2
    try:
        obj, name = load_cache(msg["load"]["module"], msg["load"].get("class"))
    except CacheEvalError as exc:
        send({"error": str(exc)})
        return 1
    send({"hello": {"name": name, "store_lookup": is_store_lookup(obj), "implementation": _identity(obj)}})
    while True:
        msg = receive()
        if not msg or "run" not in msg:
            return 0
        _run(obj, msg["run"], send, receive)


def _identity(obj: Any) -> dict | None:
    """The cache's identity as the evaluation-result cache reads it (its declared model snapshot and
    settings, the modules it loaded); None when it cannot be read (the run is then not cached)."""
    try:
        from pipeline.harness.cache import implementation_identity

        ident = implementation_identity(obj)
        json.dumps(ident, allow_nan=False)
        return ident
    except Exception:  # noqa: BLE001 - an identity that cannot be read is never reused
        return None


def _run(obj: Any, run: dict, send: Any, receive: Any) -> None:
    from pipeline.harness.evaluation import Decisions, PairStream, decide
    from pipeline.harness.interface import Pair, Request
    from pipeline.harness.stateful import ProtocolRun, StoreFailed

    protocol, start, n = run["protocol"], int(run.get("start", 0)), int(run["n"])

    def incoming(kind: str, count: int, whole: bool = False) -> Any:
        """The next `count` lines of the run, each {kind: value, ...}, read as they are needed."""
        for _ in range(count):
            msg = receive()
            if not isinstance(msg, dict) or kind not in msg:
                raise SystemExit(0)   # the scorer is gone, or speaks another protocol
            yield msg if whole else msg[kind]

    runner = None
    cache = obj
    if protocol != "pair":
        runner = ProtocolRun(obj, protocol)
        try:
            runner.prepare(((Request(*m["a"], **(m.get("x") or {})), m.get("s")) for m in incoming("a", n, True))
                           if protocol == "shared" else None)
        except StoreFailed as exc:
            send({"store_failed": str(exc), "position": exc.position})
            return
        send({"prepared": True})
        cache = runner
    d = Decisions.empty(n)

    def report(i: int) -> None:
        served = runner.last_served if runner is not None else None
        send({"i": i, "d": [d.hits[i], d.confs[i], d.lats[i], d.tiers[i], d.costs[i], d.own[i]],
              "e": d.errors.get(i), "s": served})

    pairs = PairStream(n, lambda first: (Pair(**p) for p in incoming("p", n - first)))
    decide(cache, pairs, "miss", decisions=d, start=start, report=report)
    send({"done": runner.meta() if runner is not None else None})


if __name__ == "__main__":
    sys.exit(main())
