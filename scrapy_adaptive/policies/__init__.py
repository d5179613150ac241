"""Wait policies: a URL's history in, the wait until its next visit out.

One small interface shared by the crawler and the policy simulator, chosen
with ``ADAPTIVE_WAIT_POLICY`` (a class path).  Policies are pure: no Scrapy,
no I/O, no clock of their own.
"""

from .base import DefaultWaitPolicy, WaitPolicy, load_wait_policy

__all__ = ["DefaultWaitPolicy", "WaitPolicy", "load_wait_policy"]
