"""The app's signing keys: one per purpose, from ``APP_SECRET`` when it is set, else from a random key made once
per process.

With ``APP_SECRET`` the seals it makes (a follow-up block, a browser's identity) outlive a restart and several
replicas share them; without it they hold for the life of the process. Each purpose gets a key of its own, so a
value sealed for one can never pass as another.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

from settings import read

_keys: dict[str, bytes] = {}
_process_key = secrets.token_bytes(32)
_lock = threading.Lock()


def key_for(purpose: str) -> bytes:
    """The 32-byte key for ``purpose`` (a short fixed word such as ``"followup"``)."""
    with _lock:
        if purpose not in _keys:
            secret = read("APP_SECRET") or ""
            label = f"think-act-react {purpose}\0".encode()
            _keys[purpose] = hashlib.sha256(label + secret.encode()).digest() if secret \
                else hmac.new(_process_key, label, hashlib.sha256).digest()
        return _keys[purpose]


def seal(purpose: str, text: str) -> str:
    """A hex HMAC-SHA256 of ``text`` under ``purpose``'s key."""
    return hmac.new(key_for(purpose), text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed_by_us(purpose: str, text: str, seal_hex: str) -> bool:
    """Whether ``seal_hex`` is :func:`seal` of ``text`` (compared in constant time)."""
    return hmac.compare_digest(seal(purpose, text), seal_hex)
