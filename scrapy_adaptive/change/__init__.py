"""Change detection: content digests and the rules choosing them."""

from .digest import DIGESTERS, Digester, items_digest, payload_digest
from .rules import DigestRules

__all__ = ["DIGESTERS", "Digester", "DigestRules", "items_digest", "payload_digest"]
