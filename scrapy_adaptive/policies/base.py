"""The wait-policy interface, its parameters, and the fixed policy."""

from __future__ import annotations

import inspect
from abc import ABC
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..change.trust import HEADER_UNCHECKED
from ..config.spec import GROUP_WAITS, ConfigError, Kind, SettingSpec, factor_spec, parse_value, requirement
from ..config.table import DEFAULTS, SPECS_BY_NAME
from ..frontier.hints import Hint
from ..model import Plan, Visit
from .crawl_state import CrawlWide

#: the lower-case keys an ``ADAPTIVE_WAIT_POLICIES`` entry (or the
#: ``adaptive_wait_policy`` meta key) may set, mapped to WaitParams fields
PARAM_KEYS = {
    "initial": "initial",
    "default": "default",
    "min": "minimum",
    "max": "maximum",
    "changed_factor": "changed_factor",
    "unchanged_factor": "unchanged_factor",
    "use_overdue": "use_overdue",
    "no_last_modified_factor": "no_last_modified_factor",
    "depth_factor": "depth_factor",
}

#: The first wait's factor for a page sent without Last-Modified (Heritrix's
#: WaitEvaluator: such a page is taken as twice as likely to change).  A
#: constant, not a setting: only the Heritrix rule reads it, for one wait per URL, and the
#: default policy learns each URL's rate from its visits instead; an
#: ``ADAPTIVE_WAIT_POLICIES`` entry (or a request's ``adaptive_wait_policy``)
#: may still set ``no_last_modified_factor`` for its URLs.
NO_LAST_MODIFIED_FACTOR = 0.5

#: the bounds of the entry keys that are no setting of their own
_ENTRY_SPECS: dict[str, SettingSpec] = {
    "no_last_modified_factor": factor_spec("no_last_modified_factor", GROUP_WAITS, NO_LAST_MODIFIED_FACTOR, ""),
}


@dataclass(frozen=True)
class WaitParams:
    """The numbers a wait policy works with (seconds and factors)."""

    initial: float = DEFAULTS["ADAPTIVE_WAIT_INITIAL"]
    default: float = DEFAULTS["ADAPTIVE_WAIT_DEFAULT"]
    minimum: float = DEFAULTS["ADAPTIVE_WAIT_MIN"]
    maximum: float = DEFAULTS["ADAPTIVE_WAIT_MAX"]
    changed_factor: float = DEFAULTS["ADAPTIVE_WAIT_CHANGED_FACTOR"]
    unchanged_factor: float = DEFAULTS["ADAPTIVE_WAIT_UNCHANGED_FACTOR"]
    use_overdue: bool = DEFAULTS["ADAPTIVE_WAIT_USE_OVERDUE"]
    no_last_modified_factor: float = NO_LAST_MODIFIED_FACTOR
    depth_factor: float = DEFAULTS["ADAPTIVE_WAIT_DEPTH_FACTOR"]
    #: revisits per day for budgeted policies (``ADAPTIVE_BUDGET``)
    budget: float | None = DEFAULTS["ADAPTIVE_BUDGET"]
    #: seconds over which a budgeted policy holds its realised revisit rate
    #: to the budget (``ADAPTIVE_BUDGET_WINDOW``): the feedback loop's memory,
    #: so it must be short next to the crawl's length to act at all
    budget_window: float | None = DEFAULTS["ADAPTIVE_BUDGET_WINDOW"]
    #: without a configured budget: the probability that a visit finds a
    #: change, a floor under a budget from politeness capacity (``ADAPTIVE_TARGET_PRECISION``)
    target_precision: float = DEFAULTS["ADAPTIVE_TARGET_PRECISION"]
    #: what the budget is spent for: ``versions`` or ``freshness`` (``ADAPTIVE_OBJECTIVE``)
    objective: str = DEFAULTS["ADAPTIVE_OBJECTIVE"]
    #: what the policies of one stack share (one rate allocator for the whole
    #: crawl's budget, learned beliefs); the same object in every copy made by ``updated``
    crawl: CrawlWide = field(default_factory=CrawlWide, compare=False, repr=False)

    def clamp(self, wait: float) -> float:
        return min(max(wait, self.minimum), self.maximum)

    def updated(self, values: Mapping[str, Any], where: str) -> WaitParams:
        """A copy with *values* (lower-case keys) applied and checked."""
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if key not in PARAM_KEYS:
                continue
            # held to the bounds of the setting it stands for (ADAPTIVE_WAIT_<KEY>)
            spec = _ENTRY_SPECS.get(key) or SPECS_BY_NAME[f"ADAPTIVE_WAIT_{key.upper()}"]
            try:  # read as the setting is (a number, "90", "15m"); a flag must be a bool
                typed = value if value is None or spec.kind is Kind.BOOL else parse_value(spec, value)
            except ConfigError:
                typed = value  # the requirement below says what it must be, under this entry's name
            problem = requirement(spec, typed)
            if problem is not None:
                raise ConfigError(f"{where}: {key!r} ({value!r}) must be {problem}.")
            changes[PARAM_KEYS[key]] = typed if spec.kind is Kind.BOOL else float(typed)
        params = replace(self, **changes)
        params.check(where)
        return params

    def check(self, where: str) -> None:
        for f in fields(self):
            if f.name in ("budget", "crawl", "use_overdue", "target_precision", "objective"):
                continue
            if f.name in ("initial", "default", "maximum", "changed_factor", "unchanged_factor", "depth_factor"):
                if getattr(self, f.name) <= 0:
                    key = next(k for k, v in PARAM_KEYS.items() if v == f.name)
                    raise ConfigError(f"{where}: {key!r} ({getattr(self, f.name)!r}) must be > 0.")
        if self.maximum < self.minimum:
            raise ConfigError(f"{where}: 'max' ({self.maximum!r}) must not be lower than 'min' ({self.minimum!r}).")


class WaitPolicy(ABC):  # noqa: B024 (a subclass overrides next_wait or plan: either is enough)
    """Decides the wait before a URL's next visit.

    ``history`` is the URL's record as it was *before* this visit (the
    snapshot evaluators see in ``request.meta["adaptive_record"]``):
    ``visits``, ``versions``, ``wait`` (the last wait, None before the first
    visit), ``fetched`` (time of the last visit), ``discovered``,
    ``last_modified``, ``history`` (the last visits as ``[time, change,
    status]``, oldest first, bounded) and ``policy`` (this policy's own
    per-URL memory, ``{}`` at first).

    ``visit`` is this visit's verdict (frozen): ``change`` (changed /
    unchanged / unknown), ``status``, ``content_type``, ``size``,
    ``last_modified``, ``url``, ``depth``, ``overdue`` (seconds late).

    The crawl asks :meth:`plan`, and the policy answers with a new
    :class:`~scrapy_adaptive.model.Plan`: the wait, its per-URL memory (a
    small JSON-safe dict), the crawl-log words it adds.  The frontier
    stores the plan beside the verdict in the record's one atomic write;
    neither is written into.  A policy that needs only a wait writes
    :meth:`next_wait` (the plan is then that wait alone); one with memory
    or notes overrides :meth:`plan` instead, and its :meth:`next_wait` is
    its plan's wait.

    Policies are pure: no I/O and no clock of their own (times come from the
    history), so the crawler and the simulator run the very same classes.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass whose own :meth:`next_wait` its inherited
        :meth:`plan` would never call (a policy with memory plans in
        :meth:`plan`): its wait would be silently ignored by the crawl."""
        super().__init_subclass__(**kwargs)
        if "next_wait" in cls.__dict__ and "plan" not in cls.__dict__ and cls.plan is not WaitPolicy.plan:
            owner = next(c for c in cls.__mro__ if "plan" in c.__dict__)
            raise TypeError(
                f"{cls.__qualname__} overrides next_wait, but the plan it inherits from {owner.__qualname__} "
                "does not call it (that policy's memory and notes come with its plan): override plan instead, "
                "e.g. dataclasses.replace(super().plan(history, visit), wait=...)."
            )

    @classmethod
    def from_params(cls, params: WaitParams) -> WaitPolicy:
        """Build from one policy's numbers (catch-all or a stack entry)."""
        return cls()

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        """Seconds until the next visit: the one method a policy that needs
        nothing but a wait writes.  A policy that overrides :meth:`plan`
        answers with its plan's wait."""
        if type(self).plan is WaitPolicy.plan:
            raise NotImplementedError(f"{type(self).__qualname__} defines neither next_wait nor plan.")
        return self.plan(history, visit).wait

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        """The policy's decision on *visit*, a new value beside the verdict
        (*visit* is frozen).  Here: :meth:`next_wait`'s wait, with no memory
        and no notes; a policy with either overrides this."""
        return Plan(self.next_wait(history, visit))

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        """Seconds from the hint's receipt until a visit, or None to ignore it.

        *hint* says the site announced a change (a sitemap ``lastmod``, a
        feed entry); it carries its receipt time and its source's track
        record on this host (:class:`~scrapy_adaptive.frontier.hints.Hint`).
        The frontier applies the answer only if it is earlier than the
        planned visit.  The default ignores hints, so a policy that has not
        thought about how an early visit enters its estimates and budget is
        never handed one.  The visit that follows an acted-on hint sees it in
        ``history["hint"]``.
        """
        return None

    def header_doubtful(self, history: Mapping[str, Any]) -> bool:
        """Whether the URL's fetches must be verified (full downloads despite
        its validators) because this policy still checks its first-visit
        Last-Modified and a 304 acted on would say nothing of that check.
        *history* is the URL's snapshot; the frontier asks at each fetch of
        a URL whose check goes on (``Frontier.hosts.verify_validators``).  Here:
        always, while it goes on."""
        return bool((history.get("policy") or {}).get(HEADER_UNCHECKED))

    def recheck_wait(self, history: Mapping[str, Any]) -> float | None:
        """The wait (seconds after the last fetch) this policy would plan now
        for a URL whose plan rested on odds that have since moved, or None to
        keep the plan.

        The frontier asks it for the siblings of a URL whose first-visit
        Last-Modified was just caught lying, while their own is unchecked
        (``Frontier.hosts.replan_unchecked``), and applies only an earlier visit.
        *history* is the URL's snapshot, as for :meth:`hint_wait`.
        """
        return None


def decides(cls: type[WaitPolicy]) -> bool:
    """Whether instances of *cls* can decide a wait: no abstract method left,
    and :meth:`~WaitPolicy.next_wait` or :meth:`~WaitPolicy.plan` written
    (neither is abstract, as either may be the one a policy writes).  A
    setting naming a class that cannot is refused at start-up."""
    if inspect.isabstract(cls):
        return False
    return cls.next_wait is not WaitPolicy.next_wait or cls.plan is not WaitPolicy.plan


class ConstantWaitPolicy(WaitPolicy):
    """Every visit waits the configured default wait (``ADAPTIVE_WAIT_DEFAULT``,
    an entry's ``default``), clamped to [min, max].

    The thesis's wait for a page whose change state is unknown; a baseline
    that ignores change.  It is not the crawl's default policy (that is
    :class:`~.union.UnionWaitPolicy`): it waits the *default wait*.
    """

    def __init__(self, params: WaitParams) -> None:
        self.wait = params.clamp(params.default)

    @classmethod
    def from_params(cls, params: WaitParams) -> ConstantWaitPolicy:
        return cls(params)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        return self.wait
