"""Key encodings (:mod:`scrapy_adaptive.store.keys`): what is encoded decodes
back, and keys sort in the order their store must hand them out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.store import keys
from scrapy_adaptive.store.keys import MAX_EVENT_SEQ, NEVER_MS, MalformedKey, decode_event_key, event_key
from tests.hypo import examples

times = st.integers(0, NEVER_MS)
fingerprints = st.binary(min_size=1, max_size=40)  # a fingerprinter may make any length
seqs = st.integers(0, MAX_EVENT_SEQ)


@settings(max_examples=examples(200))
@given(time_ms=times, fp=fingerprints, seq=seqs)
def test_an_event_key_decodes_to_what_made_it(time_ms: int, fp: bytes, seq: int) -> None:
    assert decode_event_key(event_key(time_ms, fp, seq)) == (time_ms, fp, seq)


@settings(max_examples=examples(200))
@given(a=st.tuples(times, fingerprints, seqs), b=st.tuples(times, fingerprints, seqs))
def test_event_keys_sort_by_time_then_one_urls_sequence(a: tuple[int, bytes, int], b: tuple[int, bytes, int]) -> None:
    """Oldest first whatever the fingerprints; one URL's events of one millisecond in sequence order."""
    ka, kb = event_key(*a), event_key(*b)
    if a[0] != b[0]:
        assert (ka < kb) == (a[0] < b[0])
    if a[:2] == b[:2] and a[2] != b[2]:
        assert (ka < kb) == (a[2] < b[2])
    assert (ka == kb) == (a == b)


def test_no_prefix_of_the_state_database_covers_another() -> None:
    """Each kind of key scans its own prefix: the outbox's must not hold records, marks or entries."""
    prefixes = [value for name, value in vars(keys).items() if name.endswith("_PREFIX") and isinstance(value, bytes)]
    assert keys.EVENT_PREFIX in prefixes and len(prefixes) == len(set(prefixes))
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and b.startswith(a)]


def test_an_event_key_out_of_range_or_too_short_is_refused() -> None:
    with pytest.raises(ValueError, match="sequence number is 0 to 255, not 256"):
        event_key(1, b"\x01" * 20, MAX_EVENT_SEQ + 1)
    with pytest.raises(MalformedKey, match="an event key needs more than 9 bytes, this one has 9"):
        decode_event_key(event_key(1, b"", 0))
