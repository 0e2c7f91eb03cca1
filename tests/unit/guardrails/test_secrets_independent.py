"""The independent secrets corpus: messages written by an author who never saw the detector
(tests/fixtures/secrets/independent/README.md). Nothing of a listed value may be stored; the near
misses come back untouched. Kinds are the author's words, so only leaks and cuts are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tianma.guardrails.secrets import find_secrets, storable

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "secrets" / "independent"


def _load(name: str) -> list[dict[str, Any]]:
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


SECRETS = _load("secrets.jsonl")
BENIGN = _load("benign.jsonl")


def test_the_corpus_is_what_its_readme_says() -> None:
    assert len(SECRETS) == 160 and len(BENIGN) == 160
    for lang in ("zh", "en"):
        assert sum(c["lang"] == lang for c in SECRETS) == 80 and sum(c["lang"] == lang for c in BENIGN) == 80
    assert all(v in c["text"] for c in SECRETS for v in c["values"])


@pytest.mark.parametrize("case", SECRETS, ids=[c["id"] for c in SECRETS])
def test_no_value_is_stored(case: dict[str, Any]) -> None:
    stored, _pii = storable(case["text"])
    assert [v for v in case["values"] if v in stored] == []


@pytest.mark.parametrize("case", BENIGN, ids=[c["id"] for c in BENIGN])
def test_near_misses_are_untouched(case: dict[str, Any]) -> None:
    assert find_secrets(case["text"]) == []
