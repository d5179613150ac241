"""The wait-policy interface and the core's fixed policy."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from scrapy.utils.misc import load_object

from ..frontier.record import Visit
from ..settings import AdaptiveConfig, ConfigError


class WaitPolicy(ABC):
    """Decides the wait before a URL's next visit.

    ``history`` is the URL's record as it was *before* this visit (the
    snapshot evaluators see in ``request.meta["adaptive_record"]``):
    ``visits``, ``versions``, ``wait`` (the last wait, None before the first
    visit), ``fetched`` (time of the last visit), ``discovered``,
    ``last_modified``, ``history`` (the last visits as ``[time, change,
    status]``, oldest first, bounded) and ``policy`` (this policy's own
    per-URL memory, ``{}`` at first).

    ``visit`` is this visit's verdict: ``change`` (changed / unchanged /
    unknown), ``status``, ``content_type``, ``size``, ``last_modified``,
    ``url``, ``depth``, ``overdue`` (seconds late).  A policy that keeps
    per-URL memory sets ``visit.policy_state`` to a small JSON-safe dict; the
    frontier stores it with the record in the same atomic write.

    Policies are pure: no I/O and no clock of their own (times come from the
    history), so the crawler and the simulator run the very same classes.
    """

    @classmethod
    def from_config(cls, config: AdaptiveConfig) -> WaitPolicy:
        return cls()

    @abstractmethod
    def next_wait(self, history: dict[str, Any], visit: Visit) -> float:
        """Seconds until the next visit."""


class DefaultWaitPolicy(WaitPolicy):
    """Every visit waits ``ADAPTIVE_WAIT_DEFAULT``, clamped to [min, max].

    The thesis's wait for a page whose change state is unknown: the
    baseline until a change-driven policy is chosen.
    """

    def __init__(self, default: float = 259_200.0, minimum: float = 0.0, maximum: float = float("inf")) -> None:
        self.default = min(max(default, minimum), maximum)

    @classmethod
    def from_config(cls, config: AdaptiveConfig) -> DefaultWaitPolicy:
        return cls(config.wait_default, config.wait_min, config.wait_max)

    def next_wait(self, history: dict[str, Any], visit: Visit) -> float:
        return self.default


def load_wait_policy(config: AdaptiveConfig) -> WaitPolicy:
    """Build the policy named by ``ADAPTIVE_WAIT_POLICY``."""
    try:
        cls = load_object(config.wait_policy)
    except (ImportError, NameError, ValueError) as exc:
        raise ConfigError(f"ADAPTIVE_WAIT_POLICY ({config.wait_policy!r}) cannot be imported: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, WaitPolicy)):
        raise ConfigError(f"ADAPTIVE_WAIT_POLICY ({config.wait_policy!r}) must name a WaitPolicy subclass.")
    return cls.from_config(config)
