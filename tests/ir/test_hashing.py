"""eggpu.ir.hashing.sha256 (the cache-hit path's SHA-256 without OpenSSL) gives hashlib's digests."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from eggpu.ir.hashing import sha256


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=3000), max_size=5))
def test_sha256_matches_hashlib_in_one_call_and_in_pieces(chunks: list[bytes]) -> None:
    whole = b"".join(chunks)
    assert sha256(whole).hexdigest() == hashlib.sha256(whole).hexdigest()
    h = sha256()
    for c in chunks:
        h.update(c)
    assert h.digest() == hashlib.sha256(whole).digest()
