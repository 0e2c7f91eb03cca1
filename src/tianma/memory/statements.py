"""Statement events and their validity: what the user said last about a subject is what holds.

A user message that states something about the user (:func:`tianma.policies.statements.
classify_statement`) is stored as a *statement event*: key ``statement.<kind>``, valid from when
it was said, and — when it was scoped in time — valid until that period ends. A lasting statement
closes the user's earlier statements about the same subject at the moment it is said, whatever
its phrasing: a correction, a reversal or simply the opposite wish. Whether two statements are
about the same subject is decided against the prior statements themselves: closeness in meaning
(the subject model's query vectors, :mod:`tianma.memory.subject_vectors` and :mod:`tianma.memory.subject_model`) or
the same structured key from the rule extractor.
No model is called; this runs inside the turn, after the event is written.

Learnt records (facts, preferences, experiences) derived from statements follow their sources: a
record all of whose statement events are closed is no longer current (:func:`is_current`), and
the next reflection deprecates it with a replace-log row.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, tzinfo
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tianma.memory.embedders import EMBED_CHARS
from tianma.memory.service import Memory
from tianma.memory.subject_model import REVISION, SUBJECT, Trained
from tianma.memory.subject_vectors import Clause, Subject, decoded, embedded, keep, models, subjects
from tianma.memory.subjects import SubjectLabels
from tianma.policies.aspects import aspects, relation
from tianma.policies.momentary import happened_just_now, tells_a_life_change
from tianma.policies.reflection import has_negation, normalise
from tianma.policies.statements import (
    StatementCue,
    asks_now,
    changes_mind,
    classify_statement,
    period_end,
    revises,
    says_it_lasts,
    says_it_recurs,
    stated_by_model,
    without_cues,
)
from tianma.storage.records import MemoryRecord
from tianma.storage.sql_store import SqlMemoryStore
from tianma.text.extract import extract_statements
from tianma.text.tokenize import token_set

if TYPE_CHECKING:
    from tianma.memory.search import AnchorCache

STATEMENT_PREFIX = "statement."


@dataclasses.dataclass(frozen=True, slots=True)
class Closeness:
    """Thresholds of the same-subject test on one kind of vector (centred cosine, plus
    :data:`SHARED_WORD_BONUS`)."""

    subject: float
    """At or above it a new statement is about the subject of an earlier one. e5 puts every “I
    prefer …” sentence near every other (raw cosines 0.85–0.93 whatever the subject), so the
    comparison first subtracts the mean of a background of ordinary statements and of the
    user's own current ones. A revision cue (不对, actually …) does not lower it: a correction
    restating one wish must not close the nearest wish of another subject."""
    label: float
    """Enough when both have the same subject label (:mod:`tianma.memory.subjects`)."""
    aspect: float
    """Enough when both name the same facet (:mod:`tianma.policies.aspects`: the length of
    answers, a budget, a time of day …); two that name facets and share none are never the same
    subject by closeness alone."""

    def enough(self, score: float, label: bool, facet: bool, floor: float | None = None) -> bool:
        """Closeness enough to be about the same subject: ``floor`` (:attr:`subject`, or higher
        to keep only the nearest), :attr:`label` with a shared subject label, or :attr:`aspect`
        with a shared facet."""
        return (score >= (self.subject if floor is None else floor) or (label and score >= self.label)
                or (facet and score >= self.aspect))  # fmt: skip


CLOSING = Closeness(subject=0.4, label=0.1, aspect=0.2)
"""What closes a statement, on subject vectors (e5 queries, :mod:`tianma.memory.subject_vectors`):
the passage thresholds (:data:`ON_PASSAGES`) less 0.1, which closes as few statements of other
subjects on the dev users (query scores sit ~0.1 lower at the same rate). Chosen on the dev users
of the learning benchmark only (README, “How it learns”): hit / stale dev 94.9 / 4.4 → 95.3 /
4.1 %, dev2 98.4 / 6.5 → 98.4 / 5.9 %, dev3 97.1 / 14.9 → 97.4 / 12.5 %; 0.05 less closes too
little (dev3 stale 16.9 %), 0.15 too much (dev2 hit 95.6 %). Kept for the subject model
(:mod:`tianma.memory.subject_model`, 2026-12-05): 0.1 higher left more stale on every dev set."""
ON_PASSAGES = Closeness(subject=0.5, label=0.2, aspect=0.3)
"""The same test on passage vectors (the search index's): a retrieved message outdated by a newer
statement in the same prompt (:func:`outdated_by_statements`) — any message, not only statements,
so no subject vector. Tuned on the dev users; the facet threshold chosen on the independent
statement pairs (replacements closed 124 → 138 of 318, other subjects 42 → 42 of 304)."""
SHARED_WORD_BONUS = 0.1
"""Added when the two statements share a content word (two characters or more)."""
_ADDITIVE = re.compile(r"\b(?:also|too|as well|another|in addition)\b|也对|还对|也有|另外|此外|还有", re.IGNORECASE)
"""A statement that adds to what was said (“I'm also allergic to …”) does not replace a
statement of the same label; only one close in meaning or with the same key."""
FACETS_OVERRULED = 0.6
"""From this closeness (on subject vectors) two statements are about one subject even when they
name different facets: a stray facet word (书 in “我教了三十多年书”, “at night” in an anecdote) must
not split two statements that say nearly the same thing. Chosen on the dev users of the learning
benchmark: hit / stale dev 98.1 / 4.4 → 98.4 / 2.5 %, dev2 and dev3 unchanged; from 0.5 hit fell
(dev 96.5, dev2 96.9 %), from 0.7 less was closed (dev stale 3.5 %). The independent statement
pairs: replacements closed 167 → 168, other subjects 48 → 49."""
REVISED_FACETS_OVERRULED = 0.5
""":data:`FACETS_OVERRULED` for a statement with a revision cue (changed my mind, 不…了, actually …):
the user says it replaces something, so a stray facet word on either side (“car seat”, “full price”)
does not keep it from the statement it is nearest to. Chosen on the dev users of the learning
benchmark (2026-12-07): stale dev4 9.7 → 9.3 %, hit unchanged, dev/dev2/dev3 unchanged; any
closeness (no floor of its own) closed other subjects on a correction (dev4 hit 92.8 → 91.3 %);
the independent statement pairs unchanged (replacements closed 204, 651; other subjects 51, 201)."""
ASKING_MARGIN = 0.1
"""Added to the subject threshold for a statement said in a question or a task for this turn
(:func:`~tianma.policies.statements.asks_now`), which then closes by closeness alone — not by a
shared subject label or facet: “新买的房子准备装修，预算25万…是找装修公司全包还是自己找工长半包？” is no
new budget for everything."""
NEAREST_MARGIN = 0.15
"""Only the earlier statements within this of the best match are closed: a new wish replaces the
statement it is nearest to, not everything in its neighbourhood."""


def statement_fields(
    text: str, at: datetime, zone: tzinfo, passing: bool = False, other: bool = False, stated: bool = False,
    leaning: bool = False,
) -> dict[str, Any]:
    """Key, validity and classification for the event of ``text`` (empty when it states nothing).

    ``passing``: the statement model (:mod:`tianma.memory.statement_model`) is confident the
    message is a passing state; then a message the rules took for no statement, or only for a
    terse assertion, holds for the day when it does not say it lasts (“Back's killing me after
    the gym, nothing active” has no time word the rules know). A wish or fact a rule found is not
    overruled, nor a schedule or a habit (:func:`~tianma.policies.statements.says_it_recurs`: the
    model reads days and hours as passing, “No meetings on Wednesdays, that's my focus day”), nor a
    change the rules read (“We're moving bedtime to 7:45, they're wrecked since school started”).
    ``other``: the model is all but sure (:data:`~tianma.memory.statement_model.SURE`) the
    message states nothing about the user; then a message the rules took only as a terse
    assertion (``StatementCue.loose``: “complete this series: a_A b_B”) is not a statement.
    ``stated``: the model is all but sure the message states something lasting; then a message
    the rules read nothing in is a wish (:func:`~tianma.policies.statements.stated_by_model`), and
    so is one they read only as a passing mood for a mood word beside the wish (“techno gives me a
    headache during exam season. jazz piano for studying, nothing else”) — not a mood beside news of
    the moment (刚被交警贴了罚单 气死我了, :func:`~tianma.policies.momentary.happened_just_now`).
    ``leaning``: the model takes it for a lasting statement (:data:`~tianma.memory.statement_model.
    CONFIDENT`, short of sure); that is enough when the message also says it revises something
    (:func:`~tianma.policies.statements.revises`: 不对…, 改主意了…, no longer …) — two pieces of
    evidence where the rules read nothing (“不对，医生说我现在能喝咖啡了”). Without the model, a message
    the rules read nothing in that says the user changes what held
    (:func:`~tianma.policies.statements.changes_mind`: 改主意了…, 周二不休了 改周一, no longer …) is a wish
    too, and ``other`` does not drop a terse assertion that says so.

    A paste (:func:`is_paste`) states nothing.
    """
    if is_paste(text):
        return {}
    cue = classify_statement(text)
    wished = stated or (leaning and revises(text)) or (cue is None and changes_mind(text))
    if wished and (cue is None or (cue.kind == "mood" and stated and not happened_just_now(text))):
        cue = stated_by_model(text) or cue
    if cue is not None and cue.loose and other and not changes_mind(text):
        return {}
    if (passing and not says_it_lasts(text) and not says_it_recurs(text)
            and (cue is None or (cue.loose and not cue.reversal and not tells_a_life_change(text)))):
        if cue is None:
            cue = StatementCue("mood", "day", False, False)
        elif cue.period is None:
            cue = dataclasses.replace(cue, kind="mood" if cue.kind == "fact" else cue.kind, period="day")
    if cue is None:
        return {}
    said = sorted({(i.key, i.polarity, normalise(i.content)) for i in extract_statements(text)})
    return {
        "key": STATEMENT_PREFIX + cue.kind,
        "valid_until": period_end(at, cue.period, zone) if cue.period else None,
        "data": {"statement": {"kind": cue.kind, "period": cue.period, "reversal": cue.reversal,
                               "style": cue.style, "said": [list(x) for x in said]}},
    }  # fmt: skip


def is_paste(text: str) -> bool:
    """Longer than the embedder reads (:data:`~tianma.memory.embedders.EMBED_CHARS`): a document, a
    story, a wish list copied 5,000 times — no statement of the user's. It would be compared with
    other statements by its first characters only, resident in every prompt (240,000 characters
    were, after 2.6 s of reading on the turn's path) and learnt from by the reflection's rules."""
    return len(text) > EMBED_CHARS


def _said(record: MemoryRecord) -> set[tuple[str, str, str]]:
    """What the rule extractor read in a statement: (key, polarity, normalised content), stored
    when the statement was recorded."""
    return {(str(k), str(p), str(c)) for k, p, c in record.data["statement"].get("said", ())}


def cue_of(record: MemoryRecord) -> StatementCue | None:
    """The classification stored on a statement event."""
    info = record.data.get("statement")
    if not info:
        return None
    return StatementCue(info["kind"], info.get("period"), bool(info.get("reversal")), bool(info.get("style")))


def is_lasting(record: MemoryRecord) -> bool:
    """A statement not scoped in time (no “today”, “this week” …)."""
    return (cue := cue_of(record)) is not None and cue.period is None


def current_lasting(store: SqlMemoryStore, user_id: str, at: datetime) -> list[MemoryRecord]:
    """The user's lasting statements (not scoped in time) that hold at ``at``, newest first."""
    return [r for r in store.current_statements(user_id, at) if is_lasting(r)]


def fill_subject_vectors(memory: Memory, at: datetime, lock: AbstractContextManager[object]) -> int:
    """Give every user's current lasting statements the subject vectors they lack (a home recorded
    before they were kept); how many were embedded. Embedded without ``lock`` (the runtime's
    memory lock), written under it, beside turns that close statements."""
    done = 0
    for user_id in memory.store.users():
        current = current_lasting(memory.store, user_id, at)
        for model in models(memory.embedder):
            made = embedded(memory.embedder, [r for r in current if decoded(memory.embedder, r, model) is None], model)
            with lock:
                keep(memory, made, model)
            done += len(made)
    return done


def close_superseded(
    memory: Memory, event: MemoryRecord, vector: np.ndarray | None, anchors: AnchorCache,
) -> list[str]:  # fmt: skip
    """Close the earlier lasting statements of the user about the same subject as ``event``.

    A time-scoped statement (a mood, “今天别推荐贵的”) closes nothing: it does not overturn a
    lasting wish, it only holds beside it for its period. ``vector``: the event's passage vector
    (None: embedded now); ``anchors``: the background statements and the subject labels
    (:mod:`tianma.memory.subjects`) — an earlier statement of the same subject label is closed
    from a lower closeness (:attr:`Closeness.label`), unless the new one only adds to it (“I'm
    also allergic to shellfish”). Returns the ids closed.
    """
    cue = cue_of(event)
    at = event.at
    if cue is None or cue.period is not None or at is None:
        return []
    current = [r for r in current_lasting(memory.store, event.user_id, at) if r.id != event.id and may_close(cue, r)]
    stored = memory.vectors.get_vectors(event.user_id, [r.id for r in current]) if current else {}
    current = [r for r in current if r.id in stored]
    if not current:
        return []
    if vector is None:
        vector = memory.embedder.embed_passages([event.content[:EMBED_CHARS]])[0]
    model = compared_by(cue)
    mine, *theirs = subjects(memory, [event, *current], model)
    same = _same_subject(event, cue, Compared(vector, mine.vector), current,
                         [Compared(stored[r.id], v.vector) for r, v in zip(current, theirs, strict=True)],
                         anchors.statement_background_queries(model), anchors.statement_subjects(), mine.clauses)  # fmt: skip
    if not same:
        return []
    said = _said(event)
    how = {r.id: _how(cue, event.content, said, r) for r in same}
    return memory.store.end_validity(event.user_id, [r.id for r in same], at, by=event.id, how=how)


def may_close(cue: StatementCue, older: MemoryRecord) -> bool:
    """Whether a statement of ``cue`` may close ``older`` at all: a complaint about an earlier
    answer (“你上回让我夜班带杯美式提神，结果…睡不着”) tells what went wrong with that answer — it adds a
    dislike and replaces only an earlier complaint, not a wish about something its words brush
    (“白天9点到下午4点在补觉，别发reminder”, 0.41 close), unless it says it revises something. Chosen
    on the dev users of the learning benchmark: dev4 hit / stale 92.8 / 9.7 → 94.2 / 9.6 %, the
    other dev sets unchanged."""
    if cue.kind != "complaint" or cue.reversal:
        return True
    earlier = cue_of(older)
    return earlier is not None and earlier.kind == "complaint"


def compared_by(cue: StatementCue) -> Trained:
    """The subject model a new statement is compared with its earlier ones by: the revision model
    (:data:`~tianma.memory.subject_model.REVISION`) when it carries a revision cue
    (:attr:`~tianma.policies.statements.StatementCue.reversal`: 不对, 改成, 其实, no longer,
    actually, these days, … now), else the subject model. Chosen on the dev users of the learning
    benchmark (docs/bench-notes.md): hit / stale dev 98.8 / 2.2 → 99.1 / 1.2 %, dev2 99.7 / 4.3 →
    99.4 / 3.7 %, dev3 97.1 / 11.7 % unchanged, dev4 92.8 / 8.6 → 92.8 / 7.9 %; the revision model
    for every statement closed more of other slots (dev4 hit 89.5 %)."""
    return REVISION if cue.reversal else SUBJECT


class Compared(NamedTuple):
    """A statement's two vectors: the passage (its subject labels) and the subject vector (its
    closeness to other statements, :mod:`tianma.memory.subject_vectors`)."""

    passage: np.ndarray
    subject: np.ndarray


def _same_subject(
    event: MemoryRecord, cue: StatementCue, mine: Compared, earlier: Sequence[MemoryRecord],
    theirs: Sequence[Compared], background: np.ndarray, subjects: SubjectLabels | None,
    clauses: Sequence[Clause] = (),
) -> list[MemoryRecord]:  # fmt: skip
    """Those of the ``earlier`` lasting statements that ``event`` is about: the same extracted
    key; or, unless the two name different facets (:mod:`tianma.policies.aspects`) and are not
    nearly the same (:data:`FACETS_OVERRULED`, :data:`REVISED_FACETS_OVERRULED` with a revision
    cue), closeness
    (:data:`CLOSING`, centred on ``background``: the background statements as queries) from its
    subject threshold within :data:`NEAREST_MARGIN` of the best, the same subject label from its
    label threshold or the same facet from its facet threshold — of the whole, or of one of its
    ``clauses`` that names that facet (:mod:`tianma.memory.subject_vectors`) — (the last two not
    for a statement that only adds, nor for one said in passing in a question or a one-off piece
    of work, :func:`~tianma.policies.statements.asks_now`, whose subject threshold is
    :data:`ASKING_MARGIN` higher)."""
    scores = subject_scores(event, mine.subject, earlier, [v.subject for v in theirs], background)
    keys = {k for k, _, _ in _said(event)}
    best = max(scores)
    asking = asks_now(event.content) and not cue.reversal
    replaces = (cue.reversal or not _ADDITIVE.search(event.content)) and not asking
    labelled = (subjects.shared(mine.passage, [v.passage for v in theirs]) if subjects is not None and replaces
                else [False] * len(earlier))  # fmt: skip
    facets = aspects(event.content)
    floor = max(CLOSING.subject + (ASKING_MARGIN if asking else 0.0), best - NEAREST_MARGIN)
    overruled = REVISED_FACETS_OVERRULED if cue.reversal else FACETS_OVERRULED  # different facets, yet one subject
    parts = [(c.facets, subject_scores(event, c.vector, earlier, [v.subject for v in theirs], background))
             for c in (clauses if replaces else ())]  # fmt: skip
    same: list[MemoryRecord] = []
    for i, (r, score, label) in enumerate(zip(earlier, scores, labelled, strict=True)):
        own = aspects(r.content)
        facet = relation(facets, own)
        by_clause = any(relation(f, own) and s[i] >= CLOSING.aspect for f, s in parts)
        if keys & {k for k, _, _ in _said(r)} or (
            (facet is not False or score >= overruled)
            and (CLOSING.enough(score, label, bool(facet) and replaces, floor) or by_clause)
        ):
            same.append(r)
    return same


def close_by_newer(
    memory: Memory, event: MemoryRecord, vector: np.ndarray, anchors: AnchorCache, now: datetime,
    skip: Iterable[str] = (),
) -> str | None:  # fmt: skip
    """Close a lasting statement recorded *after* newer ones (an import of older history) at the
    first newer current lasting statement about its subject, as that one would have closed it
    had it been there; ``skip``: newer statements that close it themselves (the same batch).
    Returns the id of the statement that closed it, or None."""
    cue = cue_of(event)
    if cue is None or cue.period is not None or event.at is None:
        return None
    left_out = set(skip)
    newer = sorted(
        (r for r in current_lasting(memory.store, event.user_id, now)
         if r.at is not None and r.at > event.at and r.id not in left_out),
        key=lambda r: r.at or now,
    )  # fmt: skip
    stored = memory.vectors.get_vectors(event.user_id, [r.id for r in newer]) if newer else {}
    newer = [r for r in newer if r.id in stored]
    if not newer:
        return None
    labels = anchors.statement_subjects()
    by: dict[Trained, list[Subject]] = {}
    for i, later in enumerate(newer):
        later_cue = cue_of(later)
        assert later_cue is not None and later.at is not None  # filtered above
        if not may_close(later_cue, event):
            continue
        model = compared_by(later_cue)
        if model not in by:  # the model the later statement compares by, for all of them at once
            by[model] = subjects(memory, [event, *newer], model)
        mine, subject = by[model][0], by[model][i + 1]
        if _same_subject(later, later_cue, Compared(stored[later.id], subject.vector), [event],
                         [Compared(vector, mine.vector)], anchors.statement_background_queries(model), labels,
                         subject.clauses):  # fmt: skip
            how = {event.id: _how(later_cue, later.content, _said(later), event)}
            memory.store.end_validity(event.user_id, [event.id], later.at, by=later.id, how=how)
            return later.id
    return None


def outdated_by_statements(
    memory: Memory, user_id: str, records: Sequence[MemoryRecord], statements: Sequence[MemoryRecord],
    background: np.ndarray, subjects: SubjectLabels,
) -> set[str]:  # fmt: skip
    """Ids of the retrieved ``records`` that a newer current lasting statement in ``statements``
    is about, on passage vectors (:data:`ON_PASSAGES`): centred closeness from its subject
    threshold, or from its label threshold with the same subject label — without the
    nearest-only margin of closing (every older message of the subject is outdated); the facets of
    :mod:`tianma.policies.aspects` only widen it (a shared facet from its facet threshold) and never
    veto (a stray facet, 晚上 in “看多了晚上老做噩梦”, must not keep an outdated message in). A
    message that was never a statement (a complaint phrased as a question, “怎么又给我推航班了”)
    cannot be closed when it is said; beside a newer statement of its subject in the same prompt
    it is outdated."""
    lasting = [s for s in statements if is_lasting(s) and s.at is not None]
    older = [r for r in records if r.kind == "event" and r.at is not None]
    if not lasting or not older:
        return set()
    vectors = memory.vectors.get_vectors(user_id, [r.id for r in (*lasting, *older)])
    content = {r.id: r.content for r in older}

    @cache
    def facets_of(record_id: str) -> frozenset[str]:  # only when closeness reaches the facet threshold, once each
        return aspects(content[record_id])

    out: set[str] = set()
    for newer in lasting:
        if newer.id not in vectors or newer.at is None:
            continue
        before = [r for r in older if r.id in vectors and r.at is not None and r.at < newer.at and r.id not in out]
        if not before:
            continue
        old = [vectors[r.id] for r in before]
        scores = subject_scores(newer, vectors[newer.id], before, old, background)
        labelled = subjects.shared(vectors[newer.id], old)
        facets = aspects(newer.content)
        out |= {
            r.id for r, score, label in zip(before, scores, labelled, strict=True)
            if ON_PASSAGES.enough(score, label, score >= ON_PASSAGES.aspect and bool(relation(facets, facets_of(r.id))))
        }  # fmt: skip
    return out


def subject_scores(
    event: MemoryRecord, vector: np.ndarray, earlier: Sequence[MemoryRecord], vectors: Sequence[np.ndarray],
    background: np.ndarray,
) -> list[float]:  # fmt: skip
    """How much each earlier statement is about the subject of ``event``: centred cosine, plus a
    bonus for a shared content word."""
    old = np.asarray(vectors, dtype=np.float32)
    centre = (background.sum(axis=0) + old.sum(axis=0)) / (len(background) + len(old))
    rows = np.vstack([old, vector[None, :]]) - centre
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
    cosines = rows[:-1] @ rows[-1]
    words = _content_words(event.content)
    return [
        float(c) + (SHARED_WORD_BONUS if words & _content_words(r.content) else 0.0)
        for c, r in zip(cosines, earlier, strict=True)
    ]


def _content_words(text: str) -> set[str]:
    """Words of two characters or more that may name a subject (revision cues taken out)."""
    return {w for w in token_set(without_cues(text)) if len(w) > 1}


def _how(cue: StatementCue, text: str, items: set[tuple[str, str, str]], old: MemoryRecord) -> str:
    """``restated`` (the same wish again) or ``revised`` (negated or replaced), decided against
    the prior statement: the same extracted key, polarity and content, or the same words with the
    same negation, is a restatement; a revision cue, or anything else, revises."""
    if cue.reversal:
        return "revised"
    before = _said(old)
    if items and before:
        return "restated" if items & before else "revised"
    same_words = _content_words(text) == _content_words(old.content)
    return "restated" if same_words and has_negation(old.content) == has_negation(text) else "revised"


def is_current(record: MemoryRecord, sources: dict[str, MemoryRecord], at: datetime) -> bool:
    """Whether a record still holds at ``at``: its own validity, and — for a learnt record — not
    every statement event it was learnt from has been closed."""
    if not record.is_valid_at(at):
        return False
    if record.kind == "event":
        return True
    return still_stated(record.provenance.event_ids, sources, at)


def still_stated(event_ids: Iterable[str], sources: dict[str, MemoryRecord], at: datetime) -> bool:
    """Whether what was learnt from these events still holds: some statement among them does
    (or they are no statements at all)."""
    stated = [sources[e] for e in event_ids if e in sources and _is_statement(sources[e])]
    return not stated or any(holds(s, at) for s in stated)


def holds(statement: MemoryRecord, at: datetime) -> bool:
    """A statement still holds, or was only said again in other words (what it says holds)."""
    return statement.is_valid_at(at) or statement.data.get("closed_as") == "restated"


def revised_by(statement: MemoryRecord) -> str | None:
    """The newer statement that negated or replaced this one, if one did."""
    closer = statement.data.get("closed_by")
    return str(closer) if closer and statement.data.get("closed_as", "revised") == "revised" else None


def _is_statement(record: MemoryRecord) -> bool:
    return (record.key or "").startswith(STATEMENT_PREFIX)


def source_events(store: SqlMemoryStore, user_id: str, records: Iterable[MemoryRecord]) -> dict[str, MemoryRecord]:
    """The events behind learnt records, in one lookup."""
    ids = {e for r in records if r.kind != "event" for e in r.provenance.event_ids}
    return store.get_many(user_id, sorted(ids)) if ids else {}


def current_only(
    store: SqlMemoryStore, user_id: str, records: Sequence[MemoryRecord], at: datetime
) -> list[MemoryRecord]:
    """``records`` without what no longer holds at ``at`` (closed, expired, or learnt from
    statements that were all closed)."""
    sources = source_events(store, user_id, records)
    return [r for r in records if is_current(r, sources, at)]
