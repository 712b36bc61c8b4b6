"""The per-installation secret that authenticates cache entries (the evaluation-result cache and the
embedding cache): an HMAC-SHA256 key of 32 random bytes in `<cache root>/secret.key`, created 0600
on first use and never shown to a scored cache (a worker process does not see the cache root).

A plain checksum only proves that an entry is whole: anyone who can write the file can recompute
it. An entry signed with this key can only come from a process that could read the key, so an
entry forged or re-signed without it is refused (a miss, one warning line) and computed again.
Standard library only.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

KEY_FILE = "secret.key"
KEY_BYTES = 32


def key_path(root: str | Path | None = None) -> Path:
    """Where the key of the cache root `root` (default: pipeline.core.settings.cache_root()) lives."""
    from pipeline.core import settings

    return settings.cache_root(root) / KEY_FILE


def installation_key(root: str | Path | None = None) -> bytes:
    """The secret key of this cache root, created (0600) when there is none. A key file that is
    not a regular file of KEY_BYTES bytes is replaced with a new key (one warning): every entry
    signed with the old one is then a miss, never an error."""
    return _key(str(key_path(root)))


@functools.lru_cache(maxsize=8)
def _key(path_text: str) -> bytes:
    from pipeline.core.errors import warn

    path = Path(path_text)
    try:
        st = path.lstat()
        if stat.S_ISREG(st.st_mode) and st.st_size == KEY_BYTES:
            if st.st_mode & 0o077:
                os.chmod(path, 0o600)  # readable by others: no longer a secret of this user
            return path.read_bytes()
        warn(f"{path}: the cache signing key is not a {KEY_BYTES}-byte regular file; making a new one "
             "(entries signed with the old key are computed again)")
        if stat.S_ISDIR(st.st_mode):
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # atomic, and never over a key another process has just made
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()


def sign(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of `data` under `key`, hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(key: bytes, data: bytes, signature: object) -> bool:
    """True when `signature` is sign(key, data) (compared in constant time)."""
    return isinstance(signature, str) and hmac.compare_digest(sign(key, data), signature)
