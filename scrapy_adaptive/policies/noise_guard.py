"""Noise pages: bytes that differ at every fetch, content that rarely does.

A page that embeds a timestamp, a session token or a rotating ad "changes"
at every fetch when change detection compares raw bytes (the ``exact``
digest rule).  To a rate estimator
such a page looks like the fastest page of the crawl, and to a
multiplicative rule like a page to visit at the minimum wait: either way it
absorbs budget that real changes elsewhere would have earned.

**The test.**  Noise is the λ = ∞ end of the Poisson family, so no amount of
visits at ordinary intervals can separate it from a fast page: every one of
them finds a "change" under both.  Only a *short* interval discriminates.
Under a Poisson page of rate λ a visit δ after the last one finds a change
with probability 1 − e^(−λδ); under noise, with certainty.  So when a URL's
last ``suspect_run`` visits all found a change, the detector schedules a
**probe** (a visit ``probe_wait`` after the last one) and accumulates the
log-likelihood ratio of noise against Poisson,
−ln(1 − e^(−λ₀t)) per probe that finds a change after t seconds.  One
probe that finds the page unchanged ends the test (the ratio is then 0:
noise never looks unchanged); reaching ln(1/``alpha``) flags the page.

**Which λ.**  The URL's own estimate λ̂ cannot be used in the decisive test:
noise inflates it (every visit "changed"; a ``Last-Modified: now`` header
even reports content zero seconds old), so a test calibrated by λ̂ loses its
power on exactly the pages it is for; and for a real fast page the prior
shrinks λ̂ *below* the truth, which makes such a test flag it.  The test is
therefore composite, H0: λ ≤ λ₀ (``protect_rate``, by default one change
per two probe waits) against noise.  The ratio falls as λ grows, so λ₀ is
the least favourable point of H0, and by Ville's inequality a page of any
rate up to λ₀ is flagged by one test with probability at most ``alpha``.

**Numbers at the defaults** (probe wait :data:`PROBE_WAIT`, one minute, or
the policy's minimum wait if shorter; λ₀ = one change per two minutes, so a
probe finds a change with p₀ = 1 − e^(−½) = 0.39 and adds 0.93 nats;
``alpha`` = 0.01, 4.6 nats, i.e. five probes):

* a noise page is flagged at its 14th visit: 8 changed visits
  (``suspect_run``), then five probes a minute apart;
* false positives: one test flags a page of rate ≤ λ₀ with probability
  ≤ p₀⁵ = 0.9 %, and a failed test doubles the run that starts the next
  one (8, 16, 32), so a page meets two or three tests in its life.  A page
  that really changes every hour (a live feed) finds a one-minute probe
  unchanged 98 times in 100, so it keeps its policy's waits.  Probes as long
  as the minimum wait (an hour) cannot tell it from noise: such a page would
  meet a test at every run of changes and be held at the maximum wait,
  dropped exactly when it is busiest;
* probe cost on real pages: a test costs 1/(1 − p) probes (≈ 1 for pages
  slower than λ₀) and tests are rare after the back-off;
* a probe may come sooner than ``ADAPTIVE_WAIT_MIN``, as noise learning's
  does: the host's politeness still spaces it;
* a flagged page is held at the maximum wait (rate 0 for an allocator) and
  re-tested after every ``retest_every`` (2) holds by one probe; a probe
  (or any visit) that finds it unchanged clears the flag, so a page that
  stopped being noisy comes back within two maximum waits.  A held page
  costs 1 + 1/``retest_every`` fetches per maximum wait (1.5), against the
  one of the minimum visit rate.

How often pages are flagged, held and probed, and what the probes cost:
``docs/lab/policy-lab.md``, "The noise guard".

Pure logic like the policies: the times are the intervals the policy reads
from the record, the state is six numbers in the URL's policy memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping
from enum import Enum
from typing import Any

from ..change.noise_learner import VERSION
from ..model import ChangeState, Visit
from .history import elapsed
from .memory import NOISE_GUARD

#: the policy-memory key holding the detector's state
KEY = NOISE_GUARD


#: the longest wait of a probe (seconds).  Only an interval short next to
#: the changes a page may really make tells noise from a fast page, so a
#: probe comes soon after the visit it checks, as noise learning's does
#: (``change/noise.py``), not after the policy's minimum wait.
PROBE_WAIT = 60.0


def probe_wait(minimum: float) -> float:
    """The guard's probe wait under a policy whose shortest wait is *minimum*
    (a minimum of 0 probes after a second)."""
    return min(minimum if minimum > 0 else 1.0, PROBE_WAIT)


# the state's slots: [mode, run, trigger, evidence, holds, resume]
_IDLE, _TESTING, _HELD, _RETESTING = 0, 1, 2, 3


class NoiseVerdict(Enum):
    """What the detector makes of a visit, and what to do next."""

    NONE = "none"  #: nothing suspicious: the policy's own wait
    PROBE = "probe"  #: suspicious: visit again after the probe wait
    RESUME = "resume"  #: a test failed: back to the wait from before it
    HOLD = "hold"  #: noise: hold at the maximum wait
    RETEST = "retest"  #: noise, but probe once to see whether it stopped

    @property
    def flagged(self) -> bool:
        """True while the URL counts as noise (register no rate for it)."""
        return self is NoiseVerdict.HOLD or self is NoiseVerdict.RETEST


class NoiseDetector:
    """Probe-based likelihood-ratio test for pages that change at every fetch.

    See the module docstring for the test and its numbers.  ``suspect_run``
    changed visits in a row start a test (0 disables the detector);
    ``probe_wait`` is the wait of a probe (the policy's minimum wait is the
    natural choice: the shortest interval allowed discriminates best);
    ``protect_rate`` is λ₀ (default 1/(2 × ``probe_wait``)); ``alpha``
    bounds the false-positive probability of one test for pages up to λ₀.
    """

    def __init__(
        self,
        probe_wait: float = PROBE_WAIT,
        *,
        protect_rate: float | None = None,
        alpha: float = 0.01,
        suspect_run: int = 8,
        max_suspect_run: int = 32,
        retest_every: int = 2,
    ) -> None:
        if probe_wait <= 0:
            raise ValueError("the probe wait must be positive")
        if not 0.0 < alpha < 1.0:
            raise ValueError("alpha must be in (0, 1)")
        self.probe_wait = probe_wait
        self.protect_rate = protect_rate if protect_rate is not None else 0.5 / probe_wait
        if self.protect_rate <= 0:
            raise ValueError("the protected rate must be positive")
        self.alpha = alpha
        self.threshold = -math.log(alpha)
        self.suspect_run = max(0, suspect_run)
        self.max_suspect_run = max(self.suspect_run, max_suspect_run)
        self.retest_every = max(1, retest_every)

    @property
    def enabled(self) -> bool:
        return self.suspect_run > 0

    def evidence(self, interval: float) -> float:
        """Nats for noise from one visit that found a change after *interval* s."""
        p = -math.expm1(-self.protect_rate * max(interval, 1e-9))
        return -math.log(p) if p > 0 else math.inf

    def probes_needed(self, interval: float | None = None) -> int:
        """Changed probes (of *interval*, default the probe wait) that flag a page."""
        return math.ceil(self.threshold / self.evidence(interval or self.probe_wait) - 1e-9)

    # -- the state ------------------------------------------------------------

    def _load(self, memory: MutableMapping[str, Any]) -> list[Any]:
        state = memory.get(KEY)
        if isinstance(state, list) and len(state) == 6:
            return list(state)
        return [_IDLE, 0, self.suspect_run, 0.0, 0, 0]  # a missing or older-format state starts afresh

    def _store(self, memory: MutableMapping[str, Any], state: list[Any]) -> None:
        if state[0] == _IDLE and state[1] == 0 and state[2] == self.suspect_run and not state[5]:
            memory.pop(KEY, None)  # the common case costs nothing in the record
        else:
            memory[KEY] = state

    def flagged(self, memory: MutableMapping[str, Any]) -> bool:
        state = memory.get(KEY)
        return isinstance(state, list) and len(state) == 6 and state[0] in (_HELD, _RETESTING)

    # -- the test -------------------------------------------------------------

    #: a genuine page at the policy's own ratio makes a run of changes long
    #: enough to start a test with at most this probability
    run_alpha = 0.01

    def run_for(self, ratio: float | None) -> int:
        """Changed visits in a row that start a test when genuine visits find a
        change with probability 1 − e^(−*ratio*).

        A budget-driven policy at a low budget times visits to see about two
        changes each (r ≈ 2 at 0.5Λ), so 86 % of genuine visits "change" and
        a fixed run of 8 starts a test on many pages, whose probes cost
        fetches the budget would have spent on changes
        (``docs/lab/policy-lab.md``, "The noise guard").
        A run a genuine page makes with probability ``run_alpha`` (7 at
        r = ln 2, 10 at r = 1, 32 at r = 2) keeps probes rare at any budget.
        """
        if ratio is None or ratio <= 0:
            return 0
        p = -math.expm1(-ratio)
        if p >= 1.0:
            return self.max_suspect_run
        return min(self.max_suspect_run, math.ceil(math.log(self.run_alpha) / math.log(p)))

    def observe_visit(
        self,
        memory: MutableMapping[str, Any],
        history: Mapping[str, Any],
        visit: Visit,
        *,
        ratio: float | None = None,
        interval: float | None = None,
    ) -> NoiseVerdict:
        """:meth:`observe` of a visit of the URL whose record (as issued) is
        *history* (*interval*: the seconds since the last visit, if the
        caller read them already; else read from the record).  A page the
        noise learner judges by its structure (its record holds a sketched
        version) has its noise learned or its changes proven real, so the
        guard never holds it: parking such a page would lose the edits it
        proved.  The guard is for the pages the learner cannot read (binary,
        unparsable, learning off)."""
        noise = history.get("noise")
        change = visit.change
        if isinstance(noise, dict) and VERSION in noise and change is ChangeState.CHANGED:
            change = ChangeState.UNCHANGED
        if interval is None:
            interval = elapsed(history, visit)
        return self.observe(memory, change, interval, ratio=ratio)

    def observe(
        self,
        memory: MutableMapping[str, Any],
        change: ChangeState,
        interval: float | None,
        *,
        ratio: float | None = None,
    ) -> NoiseVerdict:
        """Fold one visit (its verdict, seconds since the last visit) into *memory*.

        *ratio* is the expected changes per interval the policy plans for
        genuine pages (see :meth:`run_for`); None keeps ``suspect_run``.  A
        first visit (*interval* None) or an unknown verdict changes nothing:
        a test in progress goes on (probe again), a held page stays held.
        """
        if self.suspect_run <= 0:  # not enabled
            memory.pop(KEY, None)
            return NoiseVerdict.NONE
        if KEY not in memory and (change is not ChangeState.CHANGED or interval is None):
            return NoiseVerdict.NONE  # idle, and stays so (most visits): nothing to load or store
        state = self._load(memory)
        mode = state[0]
        if change is ChangeState.UNKNOWN or interval is None:
            verdict = {
                _IDLE: NoiseVerdict.NONE,
                _TESTING: NoiseVerdict.PROBE,
                _HELD: NoiseVerdict.HOLD,
                _RETESTING: NoiseVerdict.RETEST,
            }[mode]
        elif change is not ChangeState.CHANGED:
            # noise never looks unchanged: whatever was going on is over
            verdict = NoiseVerdict.RESUME if mode == _TESTING else NoiseVerdict.NONE
            if mode == _TESTING:
                state[2] = min(2 * state[2], self.max_suspect_run)  # back off: probes stay rare
            else:
                state[5] = 0
            state[0], state[1], state[3], state[4] = _IDLE, 0, 0.0, 0
        elif mode == _IDLE:
            state[1] += 1
            verdict = NoiseVerdict.NONE
            if state[1] >= max(state[2], self.run_for(ratio)):
                state[0], state[3] = _TESTING, 0.0
                verdict = NoiseVerdict.PROBE
        elif mode == _TESTING:
            state[3] = round(state[3] + self.evidence(interval), 4)
            verdict = NoiseVerdict.PROBE
            if state[3] >= self.threshold:
                state[0], state[4], state[5] = _HELD, 0, 0
                verdict = NoiseVerdict.HOLD
        elif mode == _HELD:
            state[4] += 1
            verdict = NoiseVerdict.HOLD
            if state[4] >= self.retest_every:
                state[0], state[4] = _RETESTING, 0
                verdict = NoiseVerdict.RETEST
        else:  # a re-test probe found a change: still noise
            state[0] = _HELD
            verdict = NoiseVerdict.HOLD
        self._store(memory, state)
        return verdict

    def wait(self, memory: MutableMapping[str, Any], verdict: NoiseVerdict, normal: float, hold: float) -> float:
        """The wait for *verdict*: *normal* is what the policy would wait, *hold* its maximum.

        The wait chosen when a test starts is kept and returned when the
        test fails (``RESUME``), so a rule that derives each wait from the
        last one (Heritrix's) continues where it was rather than from the
        probe's short wait.
        """
        if verdict is NoiseVerdict.HOLD:
            return hold
        if verdict is NoiseVerdict.PROBE or verdict is NoiseVerdict.RETEST:
            state = memory.get(KEY)
            if verdict is NoiseVerdict.PROBE and isinstance(state, list) and not state[5]:
                state[5] = round(normal)  # where to resume if the test fails
            return min(self.probe_wait, hold)
        if verdict is NoiseVerdict.RESUME:
            state = memory.get(KEY)
            resume = state[5] if isinstance(state, list) else 0
            if isinstance(state, list):
                state[5] = 0
                self._store(memory, state)
            return float(resume) if resume else normal
        return normal
