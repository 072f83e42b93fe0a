"""The compact digest of ``rules/proofs.json`` (``rules/proofs.digest``): which shipped verdicts
are fully proved, without parsing the JSON file.

Layout (all integers big-endian)::

    magic      8 bytes   b"EGGPUPD1"
    source    32 bytes   sha256 of the exact proofs.json bytes the digest was made from
    n, m       4+4 bytes number of entries, number of egglog-accepted digests
    entries   n x 33     raw sha256 proof-cache key (sorted) + 1 status byte (1: every dtype proved)
    accepted  m x 32     raw egglog-accepted digests (sorted)
    check     32 bytes   sha256 of everything above

:func:`decode` returns None for anything that is not exactly that (wrong magic, length or
checksum), so a truncated, corrupt or foreign file is never half-read. Whether the digest belongs
to the ``proofs.json`` beside it is the caller's check (:mod:`.shipped_proofs` compares
``source`` with the hash of the bytes it read). Only the standard library's SHA-256 is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from eggpu.ir.hashing import sha256

MAGIC = b"EGGPUPD1"
_HEAD = len(MAGIC) + 32 + 8
_ENTRY = 33
_HASH = 32


def encode(source: bytes, proved: Mapping[str, bool], accepted: Iterable[str]) -> bytes:
    """The digest of the proofs.json bytes ``source`` whose entries (hex proof-cache key -> fully
    proved) are ``proved`` and whose egglog-accepted digests (hex) are ``accepted``. Raises
    ValueError for a key or digest that is not 64 hex digits."""
    keys = sorted(_raw(k) for k in proved)
    by_raw = {_raw(k): ok for k, ok in proved.items()}
    acc = sorted({_raw(d) for d in accepted})
    body = b"".join([MAGIC, sha256(source).digest(), len(keys).to_bytes(4, "big"), len(acc).to_bytes(4, "big"),
                     *(k + (b"\x01" if by_raw[k] else b"\x00") for k in keys), *acc])
    return body + sha256(body).digest()


def decode(blob: bytes) -> tuple[bytes, dict[bytes, bool], frozenset[str]] | None:
    """(source sha256, {raw key: fully proved}, hex egglog-accepted digests) of a digest, or None
    when ``blob`` is not a well-formed, intact digest."""
    if len(blob) < _HEAD + _HASH or blob[:len(MAGIC)] != MAGIC:
        return None
    body, check = blob[:-_HASH], blob[-_HASH:]
    if sha256(body).digest() != check:
        return None
    n = int.from_bytes(body[_HEAD - 8:_HEAD - 4], "big")
    m = int.from_bytes(body[_HEAD - 4:_HEAD], "big")
    if len(body) != _HEAD + n * _ENTRY + m * _HASH:
        return None
    entries: dict[bytes, bool] = {}
    for i in range(_HEAD, _HEAD + n * _ENTRY, _ENTRY):
        status = body[i + _HASH]
        if status > 1:
            return None
        entries[body[i:i + _HASH]] = status == 1
    start = _HEAD + n * _ENTRY
    accepted = frozenset(body[i:i + _HASH].hex() for i in range(start, start + m * _HASH, _HASH))
    return body[len(MAGIC):len(MAGIC) + 32], entries, accepted


def _raw(hex_digest: str) -> bytes:
    """The 32 bytes of a lowercase sha256 hex digest (the only spelling a key has)."""
    try:
        raw = bytes.fromhex(hex_digest) if hex_digest == hex_digest.lower() else b""
    except ValueError:
        raw = b""
    if len(raw) != _HASH or raw.hex() != hex_digest:
        raise ValueError(f"not a sha256 hex digest: {hex_digest!r}")
    return raw
