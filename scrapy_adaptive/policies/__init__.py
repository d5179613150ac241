"""Wait policies: a URL's history in, the wait until its next visit out.

One small interface (:class:`WaitPolicy`) shared by the crawler and the
policy simulator, chosen with ``ADAPTIVE_WAIT_POLICY`` (a class path) and
stacked per content type, host and URL with ``ADAPTIVE_WAIT_POLICIES``.
Policies are pure: no Scrapy, no I/O, no clock of their own.
"""

from .allocator import RateAllocator
from .base import ConstantWaitPolicy, WaitParams, WaitPolicy
from .burst import BurstWaitPolicy
from .estimator import RateEstimator
from .fixed import FixedWaitPolicy
from .heritrix import HeritrixWaitPolicy
from .prior import PopulationPrior
from .rate import PrecisionWaitPolicy, ProportionalWaitPolicy
from .snapback import SnapBackWaitPolicy
from .stack import PolicyStack, load_wait_policy
from .union import UnionWaitPolicy

__all__ = [
    "BurstWaitPolicy",
    "ConstantWaitPolicy",
    "FixedWaitPolicy",
    "HeritrixWaitPolicy",
    "PolicyStack",
    "PopulationPrior",
    "PrecisionWaitPolicy",
    "ProportionalWaitPolicy",
    "RateAllocator",
    "RateEstimator",
    "SnapBackWaitPolicy",
    "UnionWaitPolicy",
    "WaitParams",
    "WaitPolicy",
    "load_wait_policy",
]
