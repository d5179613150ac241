"""Change detection: what a difference means (a response read as an answer,
its verdict), content digests and the rules choosing them, learned noise,
validator trust."""

from .digest import items_digest, payload_digest
from .rules import DIGESTERS, Digester, DigestRules

__all__ = ["DIGESTERS", "Digester", "DigestRules", "items_digest", "payload_digest"]
