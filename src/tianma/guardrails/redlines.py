"""Output redlines: the user's redline strategies (amend or replace a reply) and the built-in checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tianma.guardrails.output_checks import apply_findings, run_builtin_checks
from tianma.storage.records import MemoryRecord
from tianma.text.tokenize import token_set

VerdictType = Literal["pass", "amended", "blocked"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the redline check did to a reply."""

    verdict: VerdictType
    reply: str | None
    rules: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def to_state(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rules": list(self.rules), "notes": list(self.notes)}


def rule_matches(rule: dict[str, Any], domain: str, text_tokens: frozenset[str]) -> bool:
    """A redline applies when its domain matches or one of its keywords occurs."""
    domains = set(rule.get("domains") or ())
    keywords = {k.lower() for k in rule.get("keywords") or ()}
    return (domain in domains) or bool(keywords & text_tokens)


def check_reply(reply: str | None, message: str, domain: str, redlines: Sequence[MemoryRecord]) -> Verdict:
    """Apply every matching redline: ``append`` adds its note, ``replace`` swaps the reply.

    A pass-through only when no redline matches.
    """
    if reply is None:
        return Verdict("pass", None)
    tokens = token_set(message) | token_set(reply)
    amended, rules, notes = reply, [], []
    for record in redlines:
        rule = record.data.get("redline") or {}
        if not rule_matches(rule, domain, tokens):
            continue
        rules.append(record.id)
        note = str(rule.get("text") or record.content)
        if rule.get("action") == "replace":
            return Verdict("blocked", note, tuple(rules), (note,))
        if note not in amended:
            amended = f"{amended}\n\n{note}"
            notes.append(note)
    return Verdict("amended" if rules else "pass", amended, tuple(rules), tuple(notes))


def full_check(
    reply: str | None,
    message: str,
    domain: str,
    redlines: Sequence[MemoryRecord],
    foreign_texts: Sequence[str] = (),
    identity: tuple[str, str] = ("天马", "tianma"),
) -> Verdict:
    """The user's redlines, then the built-in checks (finance certainty, dosage without a
    disclaimer, identity drift, another user's memory, dangerous instructions) on the result."""
    first = check_reply(reply, message, domain, redlines)
    if first.reply is None or first.verdict == "blocked":
        return first
    findings = run_builtin_checks(first.reply, message, domain, foreign_texts, identity)
    if not findings:
        return first
    text, outcome = apply_findings(first.reply, findings)
    verdict: VerdictType = "blocked" if outcome == "blocked" else "amended"
    rules = first.rules + tuple(f"builtin:{f.check}" for f in findings)
    notes = first.notes + tuple(f.note for f in findings if f.severity == "amend" or outcome == "blocked")
    return Verdict(verdict, text, rules, notes)
