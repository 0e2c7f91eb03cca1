"""Multi-hop retrieval over the association graph: from the best hits to what shares a thing with them.

The graph links each record to its tags (:mod:`tianma.text.entities`: people, places, objects,
topics, amounts; stored in ``record_tags``). From the top :data:`SEEDS` candidates of the dense
and keyword channels, a two-step walk goes seed → tag → record: a seed passes its relevance to
its tags, split evenly; a tag passes what it got to the records that hold it, split by how many
do. A tag held by more than :data:`HUB` records (the user's own name, “work”) says nothing and is
not walked. This is personalised PageRank truncated at its first return to a record, which is
all a neighbourhood of seeds, tags and holders contains; it needs no graph in memory — the
neighbourhood is read from SQL with a bound on every query, so its cost does not grow with the
store. (networkx, named in the design, would need scipy for its PageRank and a graph object per
turn for the same sum.)

The :data:`ADDED` records the walk reaches most are lifted by up to :data:`LIFT`; one that no
channel had found joins the candidates, scored like the others (its similarity to the query,
its keywords) plus the lift — the walk makes a record a candidate, it does not make an
unrelated one relevant. Tuned on LoCoMo ``conv-26`` only, where it gains nothing measurable
(R@5 66.3 against 66.0 without it, multi-hop 28.4 either way; larger lifts cost single-hop more
than they win): ``retrieval.graph`` is off by default, and the LoCoMo benchmark runs tianma
with and without it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tianma.storage.records import Candidate
from tianma.storage.tag_index import TagIndex

SEEDS = 3
"""Candidates the walk starts from."""
HUB = 20
"""Records a tag may have and still be walked."""
ADDED = 10
"""Records the walk lifts (and adds, when no channel found them) at most."""
LIFT = 0.05
"""Relevance added to the record the walk reaches most (the others in proportion)."""


def walk(tags: TagIndex, user_id: str, seeds: Sequence[Candidate]) -> dict[str, float]:
    """Walk scores of the records two steps from ``seeds`` (the seeds themselves excluded)."""
    starts = {c.record.id: c.relevance for c in seeds[:SEEDS] if c.relevance > 0}
    if not starts:
        return {}
    seed_tags = tags.tags_of(user_id, list(starts))
    wanted = sorted({tag for found in seed_tags.values() for tag in found})
    holders = tags.holders(user_id, wanted, HUB + 1)
    scores: dict[str, float] = {}
    for seed, found in seed_tags.items():
        share = starts[seed] / len(found)
        for tag in found:
            held = holders.get(tag, [])
            if len(held) > HUB or len(held) < 2:  # a hub, or only the seed itself
                continue
            for record_id in held:
                if record_id not in starts:
                    scores[record_id] = scores.get(record_id, 0.0) + share / len(held)
    return scores


def lifts(scores: dict[str, float]) -> dict[str, float]:
    """What the walk adds to the relevance of the records it reached most: up to :data:`LIFT` for
    the best, in proportion for the next, :data:`ADDED` records in all."""
    best = sorted(scores.items(), key=lambda x: -x[1])[:ADDED]
    if not best:
        return {}
    top = best[0][1]
    return {rid: LIFT * s / top for rid, s in best}
