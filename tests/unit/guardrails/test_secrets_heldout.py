"""The held-out secrets corpus (tests/fixtures/secrets/heldout/README.md) as a ratchet: the
detector keeps at most as many of its values, and cuts at most as many near misses, as measured
when the corpus was first run. Pathological inputs finish in linear time."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tianma.guardrails.secrets import find_secrets, storable

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "secrets" / "heldout"
KEPT_AT_MOST = 28
"""Messages of 120 with a value left in the stored text, measured 2026-12-01."""
CUT_AT_MOST = 3
"""Near misses of 120 in which something was taken for a secret."""


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_held_out_corpus_does_not_get_worse() -> None:
    secrets, benign = _load("secrets.jsonl"), _load("benign.jsonl")
    assert (len(secrets), len(benign)) == (120, 120)
    kept = [c["id"] for c in secrets if any(v in storable(c["text"])[0] for v in c["values"])]
    cut = [c["id"] for c in benign if find_secrets(c["text"])]
    assert len(kept) <= KEPT_AT_MOST, kept
    assert len(cut) <= CUT_AT_MOST, cut


@pytest.mark.parametrize(
    "text",
    [
        "密码" * 20000,
        "password is " * 10000,
        ("word " * 30 + "\n") * 2000,
        "x" * 100000,
        "我" * 100000,
        "Ab1!" * 25000,
        "backup codes\n" + "1234 5678\n" * 10000,
    ],
    ids=["mima", "password-is", "words", "xs", "han", "mixed", "code-lines"],
)
def test_pathological_messages_are_scanned_in_linear_time(text: str) -> None:
    # Not a speed measurement: a guard against super-linear patterns (one of these took 557 s).
    start = time.perf_counter()
    find_secrets(text)
    assert time.perf_counter() - start < 20
