"""``new_id``: a prefix, 10 characters of time and 16 of randomness in Crockford base32."""

from __future__ import annotations

import os
import time

import pytest

from agi_jupyter.records import new_id

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def reference(prefix: str, millis: int, random: bytes) -> str:
    """The id by its definition, one character per 5 bits, the most significant first."""
    rand = int.from_bytes(random, "big")
    stamp = "".join(CROCKFORD[(millis >> shift) & 31] for shift in range(45, -1, -5))
    tail = "".join(CROCKFORD[(rand >> shift) & 31] for shift in range(75, -1, -5))
    return f"{prefix}_{stamp}{tail}"


@pytest.mark.parametrize(
    ("millis", "random"),
    [
        (0, bytes(10)),
        (1_764_259_200_123, bytes(range(10))),
        ((1 << 50) - 1, b"\xff" * 10),
        (1 << 50 | 7, b"\x80" + bytes(9)),  # beyond 50 bits: only the low 50 are kept
    ],
)
def test_an_id_is_its_time_then_its_randomness(
    monkeypatch: pytest.MonkeyPatch, millis: int, random: bytes
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: millis * 1_000_000 + 999_999)
    monkeypatch.setattr(os, "urandom", lambda n: random[:n])
    assert new_id("evt") == reference("evt", millis, random)


def test_ids_sort_by_creation_time() -> None:
    ids = []
    for _ in range(3):
        ids.append(new_id("ses"))
        time.sleep(0.002)
    assert ids == sorted(ids)
    assert all(len(i) == len("ses_") + 26 and set(i[4:]) <= set(CROCKFORD) for i in ids)
