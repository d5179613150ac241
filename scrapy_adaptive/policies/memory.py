"""The stored keys of a URL's policy memory, in one table.

A wait policy keeps its per-URL state in the record (``record.policy``,
returned as its plan's ``memory``): a small JSON dict written at every
visit, so its keys are short.  This table says what each key holds and
which code owns it; the code uses the named constants below, never the
letters.  The stored keys are part of the state folder's format: a saved
memory must stay readable, so a key that must change (one that read as
another state's) is read from its old letters once and moved.

>>> len(set(MEMORY_KEYS.values())) == len(MEMORY_KEYS)  # one meaning per key
True
>>> OBSERVATIONS, BURST_OFFSETS
('o', ('b0', 'b1', 'b2'))
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..change.trust import HEADER_UNCHECKED

#: RateEstimator (estimator.py): the last observations, each ``[seconds,
#: kind]`` (kind: ``estimator.UNCHANGED`` / ``CHANGED`` / ``EXACT`` / ``AGE`` / ``FRESH``), with a
#: third slot in BurstWaitPolicy: the burst state the interval started from
OBSERVATIONS = "o"
#: RateEstimator: how often Last-Modified agreed with the digest, ``[good, bad]``
LAST_MODIFIED_AGREEMENT = "lm"
#: the rate policies (rate.py): the last estimate of λ (changes per second)
ESTIMATE = "e"
#: the rate policies: while the first visit's Last-Modified age is unchecked,
#: the likelihood ratio of the checks so far (belief.py); the frontier then
#: verifies the URL's fetches (``change.trust.url_trusted``)
AGE_UNCHECKED = HEADER_UNCHECKED
#: PopulationPrior (prior.py): this URL's contribution, ``[epoch, mode, variance]``
PRIOR_CONTRIBUTION = "pp"
#: HeaderBelief (belief.py): this URL's contribution to its sibling class's
#: rate, ``[epoch, ln λ̂]``
SIBLING_CONTRIBUTION = "sr"
#: RateAllocator (allocator.py): what this URL registered, ``[epoch, queue, rate]``
ALLOCATION = "al"
#: BurstWaitPolicy (burst.py): the verdict state now entered (0, 1, 2; 3 first)
BURST_STATE = "s"
#: BurstWaitPolicy: the URL's contribution to each state's offset prior (a
#: PopulationPrior each, laid out as PRIOR_CONTRIBUTION), in state order
BURST_OFFSETS = ("b0", "b1", "b2")
#: NoiseDetector (noise_guard.py): ``[mode, run, trigger, evidence, holds, resume]``
NOISE_GUARD = "ng"
#: FixWaitPolicy / DynWaitPolicy (umbrich.py): change bits at the current interval
FIX_BITS = "b"
#: WindowWaitPolicy (umbrich.py): the last change bits ...
WINDOW_BITS = "w"
#: ... and how many were seen
WINDOW_SEEN = "n"
#: State1WaitPolicy / State2WaitPolicy (umbrich.py): the last change bits ...
MARKOV_STATE = "p"
#: ... and the count tables per interval bucket
MARKOV_TABLES = "t"

#: a visit whose difference change detection held back for a probe: its
#: ``[interval, previous fetch, time]``, observed when the probe settles it
HELD_INTERVAL = "hv"

#: the table: name -> stored key, every key of a policy memory
MEMORY_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "observations": OBSERVATIONS,
        "last_modified_agreement": LAST_MODIFIED_AGREEMENT,
        "estimate": ESTIMATE,
        "age_unchecked": AGE_UNCHECKED,
        "prior_contribution": PRIOR_CONTRIBUTION,
        "sibling_contribution": SIBLING_CONTRIBUTION,
        "allocation": ALLOCATION,
        "burst_state": BURST_STATE,
        **{f"burst_offset_{state}": key for state, key in enumerate(BURST_OFFSETS)},
        "noise_guard": NOISE_GUARD,
        "fix_bits": FIX_BITS,
        "window_bits": WINDOW_BITS,
        "window_seen": WINDOW_SEEN,
        "markov_state": MARKOV_STATE,
        "markov_tables": MARKOV_TABLES,
        "held_interval": HELD_INTERVAL,
    }
)
