"""The oracle normalisers against the original's JavaScript semantics.

The table rows were derived by reading the original's ``normalizeScalar`` and
``normalizeClaimValue`` (``trim``, ``toLowerCase``/``toUpperCase``, ``/\\s+/g``,
``Date.parse`` then ``toISOString().slice(0, 10)``) with local time taken as UTC.
The properties generate inputs from parts whose expected output follows from the
same reading, and run them through the normalisers and the scorer.
"""

from __future__ import annotations

import datetime
import time
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.worlds.retrieval.normalizers import normalize_claim_value
from pytest_agentbench.worlds.retrieval.scoring import score_receipt, values_equal
from tests.worlds.retrieval.conftest import Small

DETERMINISTIC = settings(derandomize=True, database=None, deadline=None)
"""The same examples on every run, and no wall-clock deadline on a shared machine."""

# (normalizer, value type, value, expected)
TABLE: list[tuple[str, str, Any, Any]] = [
    ("exact-v1", "string", " A ", " A "),
    ("exact-v1", "number", 3.0, 3.0),
    ("trim-lower-v1", "string", "  Team Lumen ", "team lumen"),
    ("trim-lower-v1", "string", "\ufeff\u3000Ärger\u2029", "ärger"),
    ("trim-lower-v1", "string", "\x1fTeam\x85", "\x1fteam\x85"),
    ("trim-lower-v1", "boolean", True, True),
    ("identifier-v1", "identifier", " inc - 7 731 ", "INC-7731"),
    ("identifier-v1", "identifier", "inc\u00a0-\u20287731\ufeff", "INC-7731"),
    ("identifier-v1", "identifier", "inc\x1c7731\x1f", "INC\x1c7731\x1f"),
    ("identifier-v1", "identifier", "straße", "STRASSE"),
    ("iso-date-v1", "date", "2026-09-14", "2026-09-14"),
    ("iso-date-v1", "string", "14/09/2026", "14/09/2026"),
    ("iso-date-v1", "string", "March 5, 2024", "2024-03-05"),
    ("iso-date-v1", "string", "mar 5 2024", "2024-03-05"),
    ("iso-date-v1", "string", "5 March 2024", "2024-03-05"),
    ("iso-date-v1", "string", "Tue, 05 Mar 2024 23:00:00 GMT-0200", "2024-03-06"),
    ("iso-date-v1", "string", "2024-3-5", "2024-03-05"),
    ("iso-date-v1", "string", "2024/03/05", "2024-03-05"),
    ("iso-date-v1", "string", "3/5/2024", "2024-03-05"),
    ("iso-date-v1", "string", "5.3.2024", "2024-05-03"),
    ("iso-date-v1", "string", "20240305", "20240305"),
    ("iso-date-v1", "string", "2024-03-05T23:30:00-05:00", "2024-03-06"),
    ("iso-date-v1", "string", "2024-03-06T00:30:00+01:00", "2024-03-05"),
    ("iso-date-v1", "string", "2024-03-05T23:30:00-0500", "2024-03-06"),
    ("iso-date-v1", "string", "2024-03-05T24:00", "2024-03-06"),
    ("iso-date-v1", "string", "2024-03-05T1:00", "2024-03-05T1:00"),
    ("iso-date-v1", "string", "2024-03-05T10:00:00.123456Z", "2024-03-05"),
    ("iso-date-v1", "string", "2024-02-31", "2024-03-02"),
    ("iso-date-v1", "string", "2024-13-01", "2024-13-01"),
    ("iso-date-v1", "string", "\ufeff2024-03-05 ", "2024-03-05"),
    ("iso-date-v1", "string", "2024-03-05\x00 trailing", "2024-03-05"),
    ("iso-date-v1", "string", "12", "2001-12-01"),
    ("iso-date-v1", "string", "202403", "+202403-01"),
    ("iso-date-v1", "string", "-000001-01-01", "-000001-01"),
    ("iso-date-v1", "string", "+275760-09-13", "+275760-09"),
    ("iso-date-v1", "string", "+275760-09-14", "+275760-09-14"),
    ("iso-date-v1", "string", "Monday (holiday) 2024-03-05", "2024-03-05"),
    ("iso-date-v1", "string", "March 5, 2024 garbage", "March 5, 2024 garbage"),
    ("iso-date-v1", "string", "", ""),
    ("iso-date-v1", "number", 20240305, 20240305),
    ("iso-date-v1", "string[]", ["March 5, 2024", "x"], ["2024-03-05", "x"]),
    ("trim-lower-v1", "string[]", [" B ", "\ufeffa"], ["b", "a"]),
    ("identifier-v1", "string[]", ["a b", " c"], ["AB", "C"]),
    ("string-set-v1", "string[]", [" b", "a", "\U0001f600"], [" b", "a", "\U0001f600"]),
    ("string-set-v1", "string[]", ["b", "\uffff", "\U0001f600"], ["b", "\U0001f600", "\uffff"]),
]  # fmt: skip


@pytest.mark.parametrize(("normalizer", "value_type", "value", "expected"), TABLE)
def test_normalizer_table(normalizer: str, value_type: str, value: Any, expected: Any) -> None:
    assert normalize_claim_value(value, normalizer, value_type) == expected


JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""A sample of JavaScript's white space, every class represented."""
PYTHON_ONLY_SPACE = "\x1c\x1d\x1e\x1f\x85"
"""White space to Python's ``str.isspace``, ordinary characters to JavaScript."""

spaces = st.text(alphabet=JS_SPACE, max_size=3)
words = st.text(alphabet=st.sampled_from("aZé-ßΣ7" + PYTHON_ONLY_SPACE), min_size=1, max_size=4)


@settings(DETERMINISTIC)
@given(lead=spaces, parts=st.lists(st.tuples(words, spaces), min_size=1, max_size=4))
def test_whitespace_is_javascripts(lead: str, parts: list[tuple[str, str]]) -> None:
    text = lead + "".join(word + gap for word, gap in parts)
    core = "".join(word + gap for word, gap in parts[:-1]) + parts[-1][0]
    joined = "".join(word for word, _ in parts)
    assert normalize_claim_value(text, "trim-lower-v1", "string") == core.lower()
    assert normalize_claim_value(text, "identifier-v1", "identifier") == joined.upper()
    assert normalize_claim_value([text, text], "identifier-v1", "string[]") == [joined.upper()] * 2
    assert normalize_claim_value(text, "exact-v1", "string") == text


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip
dates = st.dates(min_value=datetime.date(1000, 1, 1), max_value=datetime.date(9999, 12, 31))


@settings(DETERMINISTIC)
@given(date=dates, spelled=st.sampled_from(("full", "short", "upper")))
def test_legacy_forms_give_the_calendar_date(date: datetime.date, spelled: str) -> None:
    name = MONTHS[date.month - 1]
    month = {"full": name, "short": name[:3], "upper": name.upper()}[spelled]
    expected = date.isoformat()
    for text in (
        f"{month} {date.day}, {date.year}",
        f"{date.day} {month} {date.year}",
        f"{date.year}-{date.month}-{date.day}",
        f"{date.month}/{date.day}/{date.year}",
    ):
        assert normalize_claim_value(text, "iso-date-v1", "string") == expected, text
    compact = f"{date.year:04d}{date.month:02d}{date.day:02d}"
    assert normalize_claim_value(compact, "iso-date-v1", "string") == compact


@settings(DETERMINISTIC)
@given(
    moment=st.datetimes(
        min_value=datetime.datetime(1000, 1, 2), max_value=datetime.datetime(9999, 12, 30)
    ),
    offset_minutes=st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59),
    compact_offset=st.booleans(),
)
def test_offsets_convert_to_the_utc_calendar_date(
    moment: datetime.datetime, offset_minutes: int, compact_offset: bool
) -> None:
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    offset = f"{sign}{hours:02d}{'' if compact_offset else ':'}{minutes:02d}"
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + offset
    utc = moment - datetime.timedelta(minutes=offset_minutes)
    assert normalize_claim_value(text, "iso-date-v1", "date") == utc.date().isoformat()


@settings(DETERMINISTIC)
@given(items=st.lists(st.text(max_size=3), max_size=5, unique=True))
def test_string_sets_sort_by_utf16_code_units(items: list[str]) -> None:
    expected = sorted(items, key=lambda item: item.encode("utf-16-be", "surrogatepass"))
    assert normalize_claim_value(items, "string-set-v1", "string[]") == expected
    assert values_equal(
        {"type": "string[]", "value": items},
        {"type": "string[]", "value": list(reversed(items))},
        "string-set-v1",
    )


@settings(DETERMINISTIC, max_examples=60)
@given(
    gaps=st.tuples(spaces, spaces, spaces),
    lower=st.booleans(),
    foreign=st.sampled_from(("", *PYTHON_ONLY_SPACE)),
)
def test_the_scorer_compares_identifiers_as_the_original(
    small: Small, gaps: tuple[str, str, str], lower: bool, foreign: str
) -> None:
    """ERR-GW-12 with JavaScript white space and any case is supported; a character that
    only Python calls white space makes it a different identifier."""
    lead, inner, trail = gaps
    receipt = small.receipt("t0000001")
    value = f"{lead}ERR-{inner}GW-12{foreign}{trail}"
    receipt["finalEnvelope"]["claims"][0]["value"]["value"] = value.lower() if lower else value
    result = score_receipt(receipt, small.public.tasks["t0000001"], small.oracles["t0000001"])
    supported = foreign == ""
    assert result["supportedClaims"] == (["errorIdentifier"] if supported else [])
    assert result["success"] == (1 if supported else 0)


# The three rules where we deliberately differ from GNO, because GNO's answer depends on
# the machine it runs on (docs/worlds/retrieval.md, "Where scoring does not follow the
# machine"). Each input below scores differently under GNO on some machines; ours scores
# it one way everywhere.


@pytest.mark.parametrize("zone", ["UTC", "Asia/Tokyo", "America/Los_Angeles"])
def test_date_time_forms_without_an_offset_read_as_utc_whatever_the_zone(
    zone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GNO's Date.parse reads these as local time: in Tokyo (UTC+9) the first is
    # 2026-06-30, in Los Angeles (UTC-7) the second is 2026-07-02.
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        assert normalize_claim_value("2026-07-01T00:30:00", "iso-date-v1", "date") == "2026-07-01"
        assert normalize_claim_value("2026-07-01T23:30:00", "iso-date-v1", "date") == "2026-07-01"
        assert normalize_claim_value("July 1, 2026 00:30", "iso-date-v1", "date") == "2026-07-01"
        # A date-only ISO form is UTC in GNO too: no machine moves it.
        assert normalize_claim_value("2026-07-01", "iso-date-v1", "date") == "2026-07-01"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_integers_above_two_to_the_53_compare_exactly() -> None:
    # GNO parses JSON numbers as doubles: 2**53 + 1 reads as 2**53, so it scores this
    # claim as supported. We compare the integers the JSON text wrote.
    claimed = {"type": "number", "value": 2**53 + 1}
    assert not values_equal(claimed, {"type": "number", "value": 2**53}, "exact-v1")
    assert values_equal(claimed, {"type": "number", "value": 9007199254740993}, "exact-v1")
    # Below 2**53 every integer is a double exactly, and the two agree.
    assert not values_equal(
        {"type": "number", "value": 2**53 - 1}, {"type": "number", "value": 2**53}, "exact-v1"
    )


def test_lowercasing_follows_the_pythons_unicode_version() -> None:
    # U+A7CB LATIN CAPITAL LETTER RAMS HORN has a lowercase (U+0264) from Unicode 16.0:
    # a runtime on an older Unicode (Python 3.11's 14.0, Bun's ICU before 16) leaves it,
    # a newer one maps it. GNO's trim-lower-v1 follows its JavaScript engine's tables.
    version = tuple(int(part) for part in unicodedata.unidata_version.split("."))
    expected = "\u0264" if version >= (16, 0, 0) else "\ua7cb"
    assert normalize_claim_value(" \ua7cb ", "trim-lower-v1", "string") == expected
    # A letter every version maps the same way.
    assert normalize_claim_value(" \u00c4RGER ", "trim-lower-v1", "string") == "\u00e4rger"
