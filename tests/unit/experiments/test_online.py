"""Arm assignment: stable, balanced, independent between experiments."""

from __future__ import annotations

from collections import Counter

from tianma.experiments.online import arm_names, assign


def test_assignment_is_stable_and_balanced() -> None:
    names = arm_names(["mmr", "dense"])
    assert names == ["baseline", "dense", "mmr"]
    first = {f"user-{i}": assign("exp1", f"user-{i}", names) for i in range(3000)}
    assert first == {u: assign("exp1", u, names) for u in first}  # the same every time
    counts = Counter(first.values())
    assert set(counts) == set(names) and all(900 <= n <= 1100 for n in counts.values())  # 1000 ± 10 %
    other = {u: assign("exp2", u, names) for u in first}
    same = sum(first[u] == other[u] for u in first) / len(first)
    assert 0.25 < same < 0.42  # another experiment reshuffles (chance: 1/3)
