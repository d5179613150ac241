"""Header parsing, predictions and host trust (unit and property-based)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.change.prediction import SCHEMES, Prediction, etag_key, http_date, predict, request_validators
from scrapy_adaptive.change.trust import Trust, TrustParams
from scrapy_adaptive.integration.downloadermiddlewares.validators import body_length_of
from tests.hypo import examples

NOW = 1_795_000_000.0
LM = "Tue, 10 Nov 2026 08:00:00 GMT"
LM2 = "Wed, 11 Nov 2026 08:00:00 GMT"
U, C, N = Prediction.UNCHANGED, Prediction.CHANGED, Prediction.NONE


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ('"abc"', "abc"),
        ('W/"abc"', "abc"),
        ('"abc-gzip"', "abc"),
        ('"abc;br"', "abc"),
        ("abc", "abc"),  # unquoted, as some servers send it
        (b'"abc"', "abc"),
        ([b'"abc"', b'"abc"'], "abc"),  # duplicated, same value
        ([b'"abc"', b'"xyz"'], None),  # several different values
        ('"a", "b"', None),
        ('"unterminated', None),
        ('""', None),
        ("", None),
        (b"\x00\xff", None),
        (b'"' + b"x" * 10_000 + b'"', None),  # huge
        (None, None),
    ],
)
def test_etag_keys(raw: object, key: str | None) -> None:
    assert etag_key(raw) == key  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        (LM, True),
        ("Tuesday, 10-Nov-26 08:00:00 GMT", True),  # RFC 850
        ("Tue Nov 10 08:00:00 2026", True),  # asctime
        ("Sat, 01 Jan 2101 00:00:00 GMT", False),  # future
        ("yesterday", False),
        ("Tue, 99 Nov 2026 08:00:00 GMT", False),
        ("0", False),
        ([LM.encode(), LM2.encode()], False),  # two different dates
    ],
)
def test_http_dates(raw: object, ok: bool) -> None:
    assert (http_date(raw, NOW) is not None) == ok  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scheme", "etag", "lm", "expected"),
    [
        ("etag", '"a"', LM2, U),
        ("etag", '"b"', LM, C),
        ("etag", None, LM, N),
        ("timestamp", '"b"', LM, U),
        ("timestamp", '"a"', LM2, C),
        ("timestamp", '"a"', "garbage", N),
        ("both", '"a"', LM, U),
        ("both", '"a"', LM2, C),  # both must say "no change"
        ("both", '"a"', None, U),  # one alone when the other is missing
        ("both", None, "garbage", N),
        ("either", '"a"', LM2, U),  # one is enough
        ("either", '"b"', LM2, C),
        ("either", None, None, N),
    ],
)
def test_schemes(scheme: str, etag: str | None, lm: str | None, expected: Prediction) -> None:
    assert predict(scheme, old_etag='"a"', old_last_modified=LM, etag=etag, last_modified=lm, now=NOW) is expected


def test_weak_and_gzip_variants_of_the_same_etag_predict_no_change() -> None:
    assert predict("etag", old_etag='"v1"', old_last_modified=None, etag=b'W/"v1-gzip"', last_modified=None) is U


def test_no_stored_validators_means_no_prediction() -> None:
    assert predict("either", old_etag=None, old_last_modified=None, etag='"a"', last_modified=LM, now=NOW) is N


header_values = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.text(max_size=64),
    st.lists(st.binary(max_size=32), max_size=3),
    st.sampled_from(['"a"', 'W/"a"', '"a-gzip"', LM, LM2, "Sat, 01 Jan 2101 00:00:00 GMT", "", '"']),
)


@settings(max_examples=examples(400), deadline=None)
@given(
    scheme=st.sampled_from(SCHEMES),
    old_etag=st.one_of(st.none(), st.text(max_size=40)),
    old_lm=st.one_of(st.none(), st.text(max_size=40), st.just(LM)),
    etag=header_values,
    lm=header_values,
)
def test_any_headers_give_a_prediction_and_never_raise(
    scheme: str, old_etag: str | None, old_lm: str | None, etag: object, lm: object
) -> None:
    result = predict(scheme, old_etag=old_etag, old_last_modified=old_lm, etag=etag, last_modified=lm, now=NOW)  # type: ignore[arg-type]
    assert result in (U, C, N)


@settings(max_examples=examples(200), deadline=None)
@given(etag=st.text(max_size=40), lm=st.text(max_size=40))
def test_request_validators_are_sent_verbatim_or_not_at_all(etag: str, lm: str) -> None:
    headers = request_validators(etag, lm)
    for name, sent in headers.items():
        original = etag if name == "If-None-Match" else lm
        assert sent == original.strip().encode("latin-1")
        assert b"\r" not in sent and b"\n" not in sent


@pytest.mark.parametrize(
    ("value", "length"),
    [(10, 10), (0, 0), (None, None), ("twisted.web.iweb.UNKNOWN_LENGTH", None), (True, None), (-1, None)],
)
def test_body_length_of_tolerates_what_handlers_pass(value: object, length: int | None) -> None:
    assert body_length_of(value) == length


def test_trust_starts_with_full_verification_then_thins_out() -> None:
    params = TrustParams(warmup=3, min_rate=0.02)
    trust = Trust()
    for _ in range(3):
        assert trust.should_verify(params)
        trust.observe_verified("unchanged", "unchanged")
    assert trust.verify_rate(params) == pytest.approx(0.5)
    trust.observe_verified("unchanged", "unchanged")
    assert trust.verify_rate(params) == pytest.approx(0.25)
    for _ in range(100):
        trust.observe_verified("unchanged", "unchanged")
    assert trust.verify_rate(params) == pytest.approx(0.02)
    assert trust.reliability == 1.0 and trust.usefulness == 1.0


def test_one_lie_sends_the_host_back_to_full_downloads() -> None:
    params = TrustParams(warmup=3, min_rate=0.02)
    trust = Trust(streak=50, said_unchanged=50, right=50, unchanged_seen=50)
    assert trust.observe_verified("unchanged", "changed") is True
    assert trust.should_verify(params) and trust.verify_rate(params) == 1.0
    assert trust.reliability == pytest.approx(50 / 51)


@settings(max_examples=examples(100), deadline=None)
@given(streak=st.integers(0, 10_000), min_rate=st.sampled_from([0.02, 0.1, 0.5]))
def test_a_liar_is_caught_within_a_bounded_number_of_predictions(streak: int, min_rate: float) -> None:
    """However trusted, a host gets a verification fetch within 1/min_rate predictions."""
    params = TrustParams(warmup=3, min_rate=min_rate)
    trust = Trust(streak=streak)
    acted = 0
    while not trust.decide(params):
        acted += 1
        assert acted <= math.ceil(1 / min_rate)


def test_trust_roundtrips_through_its_stored_dict() -> None:
    trust = Trust(said_unchanged=4, right=3, lies=1, streak=2)
    assert Trust.from_dict(trust.to_dict()) == trust
    assert Trust.from_dict({"right": "2", "unknown": 5}).right == 2


def test_a_urls_own_record_counts_right_predictions_and_restarts_at_a_lie() -> None:
    from scrapy_adaptive.change.trust import TrustParams, observe_url, url_trusted, url_verify_rate

    params = TrustParams(warmup=2, min_rate=1 / 16)
    record = None
    assert observe_url(record, "changed", "changed") is None  # nothing to count yet
    rates = []
    for _ in range(8):
        record = observe_url(record, "unchanged", "unchanged")
        rates.append(url_verify_rate(record, params))
    # as a class's: nothing before warmup, then halving to the floor
    assert rates == [None, 0.5, 0.25, 0.125, 1 / 16, 1 / 16, 1 / 16, 1 / 16]
    record = observe_url(record, "unchanged", "changed")
    assert record == [1, 0, 0] and not url_trusted(record, params) and url_verify_rate(record, params) is None
    # written by older code: [lies, right]
    assert url_verify_rate([1, 3], params) == 0.25 and url_trusted([1, 3], params)


@given(right=st.integers(0, 40), lies=st.integers(0, 3), predictions=st.integers(1, 100))
def test_a_urls_own_schedule_never_acts_blind_longer_than_its_rate_allows(
    right: int, lies: int, predictions: int
) -> None:
    from scrapy_adaptive.change.trust import TrustParams, url_decide, url_verify_rate

    params = TrustParams(warmup=3, min_rate=1 / 32)
    record: list[int] = [lies, right, 0]
    rate = url_verify_rate(record, params)
    if rate is None:
        return
    run = longest = 0
    for _ in range(predictions):
        verify, record = url_decide(record, rate)
        run = 0 if verify else run + 1
        longest = max(longest, run)
    assert longest <= math.ceil(1 / rate) - 1 <= 31
