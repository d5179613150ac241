"""The stored keys of a URL's policy memory, in one table.

A wait policy keeps its per-URL state in the record (``record.policy``,
set through ``visit.policy_state``): a small JSON dict written at every
visit, so its keys are short.  This table says what each key holds and
which code owns it; the code uses the named constants below, never the
letters.  The stored keys are part of the state folder's format: a saved
memory must stay readable, so a key is never renamed here, only its name.

>>> len(set(MEMORY_KEYS.values())) == len(MEMORY_KEYS)  # one meaning per key
True
>>> OBSERVATIONS, BURST_OFFSETS
('o', ('b0', 'b1', 'b2'))
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: name -> stored key, with the value each key holds
MEMORY_KEYS: Mapping[str, str] = MappingProxyType(
    {
        # RateEstimator (estimator.py): the last observations, each
        # [seconds, kind] (kind: estimator.UNCHANGED / CHANGED / EXACT), a third
        # slot with the burst state the interval started from (burst.py)
        "observations": "o",
        # RateEstimator: how often Last-Modified agreed with the digest, [good, bad]
        "last_modified_agreement": "lm",
        # the rate policies (rate.py): the last estimate of λ (changes per second)
        "estimate": "e",
        # PopulationPrior (prior.py): this URL's contribution, [epoch, mode, variance]
        "prior_contribution": "pp",
        # RateAllocator (allocator.py): what this URL registered, [epoch, queue, rate]
        "allocation": "al",
        # BurstWaitPolicy (burst.py): the verdict state now entered (0, 1, 2; 3 first)
        "burst_state": "s",
        # BurstWaitPolicy: the URL's contribution to each state's offset prior
        # (a PopulationPrior each, same layout as "pp")
        "burst_offset_0": "b0",
        "burst_offset_1": "b1",
        "burst_offset_2": "b2",
        # NoiseDetector (noise.py): [mode, run, trigger, evidence, holds, resume]
        "noise": "nz",
        # FixWaitPolicy / DynWaitPolicy (umbrich.py): change bits at the current interval
        "fix_bits": "b",
        # WindowWaitPolicy (umbrich.py): the last change bits, and how many were seen
        "window_bits": "w",
        "window_seen": "n",
        # State1WaitPolicy / State2WaitPolicy (umbrich.py): the last change
        # bits, and the count tables per interval bucket
        "markov_state": "p",
        "markov_tables": "t",
    }
)

OBSERVATIONS = MEMORY_KEYS["observations"]
LAST_MODIFIED_AGREEMENT = MEMORY_KEYS["last_modified_agreement"]
ESTIMATE = MEMORY_KEYS["estimate"]
PRIOR_CONTRIBUTION = MEMORY_KEYS["prior_contribution"]
ALLOCATION = MEMORY_KEYS["allocation"]
BURST_STATE = MEMORY_KEYS["burst_state"]
#: one per burst state, in state order
BURST_OFFSETS = (MEMORY_KEYS["burst_offset_0"], MEMORY_KEYS["burst_offset_1"], MEMORY_KEYS["burst_offset_2"])
NOISE = MEMORY_KEYS["noise"]
FIX_BITS = MEMORY_KEYS["fix_bits"]
WINDOW_BITS = MEMORY_KEYS["window_bits"]
WINDOW_SEEN = MEMORY_KEYS["window_seen"]
MARKOV_STATE = MEMORY_KEYS["markov_state"]
MARKOV_TABLES = MEMORY_KEYS["markov_tables"]
