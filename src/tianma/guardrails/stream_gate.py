"""Check-then-release for streamed replies: a sentence reaches the client only after the whole
reply so far has passed the redline check.

The choice (see README, "Streaming and the redline check"): text is held until a sentence ends
(。！？；, a newline, or ``. ! ? ;`` before a space) or ``MAX_HOLD`` characters pile up without
one; then the reply so far is checked and, when nothing would block it, the held text is
released. Time to first token grows by the first sentence; the rest streams at the model's
pace, one sentence behind. A blocked check stops the stream: nothing of the offending sentence
was shown, and the redline node's replacement follows what already was.
"""

from __future__ import annotations

import re
from collections.abc import Callable

SENTENCE_END = re.compile(r"[。！？；\n]|[.!?;](?=\s)")
MAX_HOLD = 200
"""Characters held without a sentence end before they are checked and released anyway."""


class StreamGate:
    """Feed it the model's pieces; it calls ``release`` with text that passed ``passes``.

    Args:
        passes: True when the reply so far may be shown (no blocking finding).
        release: receives each released run of text, in order.
    """

    def __init__(self, passes: Callable[[str], bool], release: Callable[[str], None]) -> None:
        self._passes = passes
        self._release = release
        self.text = ""
        """Everything the model sent so far."""
        self.released = ""
        """What the client has been given."""
        self.blocked = False
        self.checks = 0
        """How many times the reply was checked (for spans)."""

    def feed(self, piece: str) -> bool:
        """Take one piece; False once the reply is blocked (stop reading the model then)."""
        if self.blocked:
            return False
        self.text += piece
        held = self.text[len(self.released) :]
        ends = [m.end() for m in SENTENCE_END.finditer(held)]
        if ends:
            cut = ends[-1]
        elif len(held) >= MAX_HOLD:
            cut = len(held)
        else:
            return True
        return self._flush(len(self.released) + cut)

    def finish(self) -> bool:
        """The model is done: check and release what is still held; False when blocked."""
        if self.blocked:
            return False
        return self._flush(len(self.text))

    def _flush(self, upto: int) -> bool:
        if upto <= len(self.released):
            return True
        self.checks += 1
        if not self._passes(self.text[:upto]):
            self.blocked = True
            return False
        chunk = self.text[len(self.released) : upto]
        self.released = self.text[:upto]
        self._release(chunk)
        return True


def tail_after(released: str, final: str | None) -> str:
    """What to send after ``released`` so the client ends up with the checked reply ``final``:
    the rest of it when ``released`` is its beginning, else the whole of it after a blank line
    (a replacement following what had already passed)."""
    if not final:
        return ""
    if final.startswith(released):
        return final[len(released) :]
    return f"\n\n{final}" if released else final
