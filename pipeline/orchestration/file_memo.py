"""sha256 of large files (model weights) remembered across processes, for the step cache's keys.

`<cache root>/steps/file-sha256.json` maps a file's absolute path to its sha256 and the status it had
when hashed (size, mtime_ns, ctime_ns, inode, device); a file whose status differs in any of them is
hashed again. ctime cannot be set by a user-space tool (`touch` sets mtime only; any write, rename or
chmod moves it), so a rewritten file is never taken for the old one. The memo is signed like every
cache entry (HMAC-SHA256 under `<cache root>/secret.key`); a memo that is unreadable or not signed
with this installation's key is ignored (every file is hashed again) and rewritten.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pipeline.core.hashing import canonical_json, file_sha256

NAME = "file-sha256.json"


def _status(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


class FileMemo:
    def __init__(self, cache_root: Path) -> None:
        from pipeline.core.secret import installation_key

        self.path = Path(cache_root) / "steps" / NAME
        self.key = installation_key(cache_root)
        self.entries: dict[str, list] = {}
        self.changed = False
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if self._valid(data):
                self.entries = data["entries"]
        except (OSError, ValueError):
            pass

    def _sign(self, entries: dict) -> str:
        from pipeline.core.secret import sign

        return sign(self.key, canonical_json(entries).encode("utf-8"))

    def _valid(self, data: object) -> bool:
        from pipeline.core.secret import verify

        return (isinstance(data, dict) and isinstance(data.get("entries"), dict)
                and verify(self.key, canonical_json(data["entries"]).encode("utf-8"), data.get("signature")))

    def sha256(self, path: Path) -> str:
        p = os.path.abspath(path)
        status = _status(os.stat(p))
        known = self.entries.get(p)
        if isinstance(known, list) and len(known) == 2 and known[0] == status:
            return known[1]
        digest = file_sha256(p)
        if _status(os.stat(p)) == status:  # not changed while it was read
            self.entries[p] = [status, digest]
            self.changed = True
        return digest

    def save(self) -> None:
        """Write the memo if it changed (best effort: a failed write only costs a re-hash later)."""
        if not self.changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".file-sha256.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"entries": self.entries, "signature": self._sign(self.entries)}, fh)
            os.replace(tmp, self.path)
            self.changed = False
        except OSError:
            pass
