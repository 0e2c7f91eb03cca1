"""The variant grammar: slots, settings, and clear errors."""

from __future__ import annotations

import pytest

from tianma import Settings
from tianma.errors import InvalidInputError
from tianma.experiments.variants import parse_variant


def test_slots_and_settings_become_settings_overrides() -> None:
    v = parse_variant("mmr-strict=rerank:rerank_mmr, retrieval.min_relevance=0.25,retrieval.graph=true")
    assert v.name == "mmr-strict" and v.items == ("rerank:rerank_mmr", "retrieval.min_relevance=0.25", "retrieval.graph=true")
    assert v.overrides == {"nodes": {"rerank": "rerank_mmr"}, "retrieval": {"min_relevance": 0.25, "graph": True}}
    s = Settings(**v.settings({"retrieval": {"candidates": 40}}))
    assert (s.nodes.rerank, s.retrieval.min_relevance, s.retrieval.graph, s.retrieval.candidates) == ("rerank_mmr", 0.25, True, 40)
    assert parse_variant("p=retrieve:my_pkg.search:retrieve").overrides == {"nodes": {"retrieve": "my_pkg.search:retrieve"}}
    assert parse_variant("r=reflection.score:my_pkg:score").overrides == {"nodes": {"reflection": {"score": "my_pkg:score"}}}


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("rerank:rerank_mmr", "NAME=slot"), ("x=", "NAME=slot"), ("baseline=rerank:x", "as configured"),
     ("x=ranker:mmr", "no slot 'ranker'"), ("x=reflection.guard:mine", "no slot 'reflection.guard'"), ("x=retrieval.min_relevance=7", "retrieval.min_relevance"),
     ("x=retrieval.nope=1", "nope"), ("x=rerank", "slot:implementation"), ("x=min_relevance=0.1", "section.name")],
)
def test_a_bad_variant_is_refused_with_what_is_wrong(spec: str, needle: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        parse_variant(spec)
    assert needle in str(err.value)
