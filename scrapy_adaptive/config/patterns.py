"""Users' regular expressions, run on what servers send, in bounded time.

A pattern from the settings (a digest rule's ``patterns``, a list entry's
``url``) runs on text a server chose: a page's body, a URL it linked to.
Python's ``re`` has no time bound, and a pattern with nested or overlapping
repetition (``(a+)+$``, ``(a|aa)+$``) backtracks for hours on a few dozen
characters of the wrong text, holding the whole crawl (the reactor's
thread) on one page.  No check of the pattern at start-up can tell every
such pattern from a safe one (``(?:<b>[^<]*</b>)+`` nests too), so the
time itself is bounded: the patterns are compiled with the ``regex``
module, whose default syntax is ``re``'s, which avoids many catastrophic
cases by itself and stops the others at a timeout.

A pattern that runs past :data:`PATTERN_TIMEOUT` on one text gives no
answer for it: the caller falls back (the page is digested exactly, the URL
taken as not matching), and the pattern's first timeout is said in one
WARNING naming the setting and the pattern.
"""

from __future__ import annotations

import logging

import regex

from .spec import ConfigError

logger = logging.getLogger(__name__)

#: seconds one pattern may run on one text (``regex`` checks the clock
#: between steps, so a run may take up to about twice this): a hundred
#: times what a linear pattern takes on a 1 MB page
PATTERN_TIMEOUT = 1.0


class UserPattern:
    """A user's regular expression, named by the setting that holds it."""

    __slots__ = ("compiled", "label", "timeouts")

    def __init__(self, source: str, label: str) -> None:
        """Compile *source*; *label* names it in messages (``ADAPTIVE_DIGEST_RULES[0]:
        pattern '(a+)+$'``).  A :class:`ConfigError` if it is no regular expression."""
        try:
            self.compiled = regex.compile(source)
        except (regex.error, TypeError, ValueError) as exc:
            raise ConfigError(f"{label} is not a valid regular expression: {exc}") from None
        self.label = label
        #: texts this pattern ran out of time on, in this process
        self.timeouts = 0

    @property
    def pattern(self) -> str:
        return str(self.compiled.pattern)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserPattern) and other.compiled == self.compiled

    def __hash__(self) -> int:
        return hash(self.compiled)

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"

    def search(self, text: str, *, on: str, fallback: str) -> bool | None:
        """Whether the pattern occurs in *text*; None when it ran out of time
        (*on* names the text, *fallback* what the caller does instead, for the warning)."""
        try:
            return self.compiled.search(text, timeout=PATTERN_TIMEOUT) is not None
        except TimeoutError:
            self._ran_out(on, fallback)
            return None

    def sub(self, replacement: str, text: str, *, on: str, fallback: str) -> str | None:
        """*text* with every match replaced; None when the pattern ran out of time."""
        try:
            return str(self.compiled.sub(replacement, text, timeout=PATTERN_TIMEOUT))
        except TimeoutError:
            self._ran_out(on, fallback)
            return None

    def _ran_out(self, on: str, fallback: str) -> None:
        self.timeouts += 1
        if self.timeouts == 1:
            logger.warning(
                "%s ran past %g s on %s: %s. Nested or overlapping repetition (such as (a|aa)+) backtracks "
                "without end on some texts; simplify the pattern. Said once.",
                self.label,
                PATTERN_TIMEOUT,
                on,
                fallback,
            )
