"""The oracle's value normalisers, with the JavaScript string and date semantics the
original scores with.

The original normalises in TypeScript: ``trim``, ``toLowerCase``/``toUpperCase``,
``/\\s+/g`` and ``Date.parse`` followed by ``toISOString().slice(0, 10)``. Python's
``str.strip`` and ``str.split`` use a different whitespace class (they take
U+001C..U+001F and U+0085, and leave U+FEFF), and ``datetime`` parses a different
set of date strings, so this module carries both definitions itself.

``Date.parse`` is implemented as V8's date parser reads a string: the ES5 ISO
format first (date-only forms are UTC, date-time forms without an offset are
local), then the legacy grammar (``March 5, 2024``, ``2024-3-5``, ``5.3.2024``,
``2024/03/05 10:00 GMT+0100``, ...). Local time is UTC here: a benchmark run must
not score differently by the machine's time zone, and the original's committed
reports carry no time zone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.worlds.retrieval.jscanon import number, utf16_key

JS_WHITESPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""JavaScript's ``\\s`` and the set ``String.prototype.trim`` removes: WhiteSpace
(TAB, VT, FF, SP, NBSP, ZWNBSP, category Zs) and LineTerminator (LF, CR, LS, PS)."""


def js_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in JS_WHITESPACE:
        start += 1
    while end > start and text[end - 1] in JS_WHITESPACE:
        end -= 1
    return text[start:end]


def js_remove_whitespace(text: str) -> str:
    """``text.replace(/\\s+/g, "")``."""
    return "".join(char for char in text if char not in JS_WHITESPACE)


def normalize_scalar(value: Any, normalizer: str) -> Any:
    """The original's ``normalizeScalar``: strings change, numbers and booleans never."""
    if not isinstance(value, str):
        return value
    if normalizer == "trim-lower-v1":
        return js_trim(value).lower()
    if normalizer == "identifier-v1":
        return js_remove_whitespace(js_trim(value).upper())
    if normalizer == "iso-date-v1":
        return iso_date(value)
    return value


def normalize_claim_value(value: Any, normalizer: str, value_type: Any) -> Any:
    """The original's ``normalizeClaimValue``: ``string[]`` items one by one, then
    sorted by UTF-16 code units under ``string-set-v1``."""
    if value_type == "string[]" and isinstance(value, list):
        items = [js_string(normalize_scalar(item, normalizer)) for item in value]
        return sorted(items, key=utf16_key) if normalizer == "string-set-v1" else items
    return normalize_scalar(value, normalizer)


def js_string(value: Any) -> str:
    """``String(value)`` for the JSON scalars a claim item can hold."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number(value)
    raise TypeError(f"no JavaScript string form for {type(value).__name__}")


def iso_date(text: str) -> str:
    """``Date.parse(text)`` formatted by ``toISOString().slice(0, 10)``, or ``text``
    unchanged when it does not parse."""
    millis = date_parse(text)
    return text if millis is None else iso_string(millis)[:10]


_MS_PER_DAY = 86_400_000
_MAX_TIME_MS = 8_640_000_000_000_000


def date_parse(text: str) -> int | None:
    """Milliseconds since the epoch that ``Date.parse`` returns (local time = UTC), or
    None for NaN. Millisecond precision is exact: every parsed field is an integer."""
    fields = _Parser(text).parse()
    if fields is None:
        return None
    year, month, day, hour, minute, second, millisecond, offset_seconds = fields
    days = _days_from_civil(year, month, 1) + day - 1
    millis = days * _MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millisecond
    millis -= offset_seconds * 1000
    return millis if -_MAX_TIME_MS <= millis <= _MAX_TIME_MS else None


def iso_string(millis: int) -> str:
    """``Date.prototype.toISOString``: four-digit years, six digits and a sign outside 0..9999."""
    days, rest = divmod(millis, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(rest, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, millisecond = divmod(rest, 1000)
    year_text = f"{year:04d}" if 0 <= year <= 9999 else f"{'-' if year < 0 else '+'}{abs(year):06d}"
    return (
        f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{millisecond:03d}Z"
    )


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date, for any integer year."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


# The date string grammar, as V8's DateParser tokenises and composes it.

_NONE = None
_MAX_SIGNIFICANT_DIGITS = 9
_SMI_MAX = 2**31 - 1

_INVALID_WORD, _MONTH_NAME, _TIME_ZONE_NAME, _TIME_SEPARATOR, _AM_PM = range(5)
_KEYWORDS: tuple[tuple[str, int, int], ...] = (
    *(
        (name, _MONTH_NAME, index + 1)
        for index, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
        )
    ),
    ("am", _AM_PM, 0),
    ("pm", _AM_PM, 12),
    ("ut", _TIME_ZONE_NAME, 0),
    ("utc", _TIME_ZONE_NAME, 0),
    ("z", _TIME_ZONE_NAME, 0),
    ("gmt", _TIME_ZONE_NAME, 0),
    ("cdt", _TIME_ZONE_NAME, -5),
    ("cst", _TIME_ZONE_NAME, -6),
    ("edt", _TIME_ZONE_NAME, -4),
    ("est", _TIME_ZONE_NAME, -5),
    ("mdt", _TIME_ZONE_NAME, -6),
    ("mst", _TIME_ZONE_NAME, -7),
    ("pdt", _TIME_ZONE_NAME, -7),
    ("pst", _TIME_ZONE_NAME, -8),
    ("t", _TIME_SEPARATOR, 0),
)


@dataclass(frozen=True)
class _Token:
    kind: str
    """number, symbol, word, space, unknown, end or invalid."""
    value: int = 0
    length: int = 0
    symbol: str = ""
    word_type: int = _INVALID_WORD

    def is_number(self, length: int | None = None) -> bool:
        return self.kind == "number" and (length is None or self.length == length)

    def is_symbol(self, symbol: str) -> bool:
        return self.kind == "symbol" and self.symbol == symbol

    def is_sign(self) -> bool:
        return self.kind == "symbol" and self.symbol in "+-"

    def sign(self) -> int:
        return 1 if self.symbol == "+" else -1

    def is_word(self, word_type: int) -> bool:
        return self.kind == "word" and self.word_type == word_type

    def is_z(self) -> bool:
        return self.is_word(_TIME_ZONE_NAME) and self.length == 1


def _lookup_word(text: str) -> tuple[int, int]:
    prefix = "".join(chr(ord(char) | 0x20) for char in text[:3])
    for name, word_type, value in _KEYWORDS:
        if prefix == name and (len(text) <= 3 or word_type == _MONTH_NAME):
            return word_type, value
    return _INVALID_WORD, 0


def _tokens(text: str) -> Iterator[_Token]:
    """V8's DateStringTokenizer over UTF-16 code units; a NUL code unit ends the input."""
    units = text.encode("utf-16-le", "surrogatepass")
    chars = [chr(int.from_bytes(units[i : i + 2], "little")) for i in range(0, len(units), 2)]
    if "\0" in chars:
        chars = chars[: chars.index("\0")]
    position = 0
    while position < len(chars):
        char = chars[position]
        start = position
        if "0" <= char <= "9":
            while position < len(chars) and chars[position] == "0":
                position += 1
            value = digits = 0
            while position < len(chars) and "0" <= chars[position] <= "9":
                if digits < _MAX_SIGNIFICANT_DIGITS:
                    value = value * 10 + ord(chars[position]) - 48
                digits += 1
                position += 1
            yield _Token("number", value, position - start)
        elif char in ":-+.)":
            position += 1
            yield _Token("symbol", symbol=char)
        elif char >= "A" and char not in _WORD_BREAKS:
            while (
                position < len(chars)
                and chars[position] >= "A"
                and chars[position] not in _WORD_BREAKS
            ):
                position += 1
            word_type, value = _lookup_word("".join(chars[start:position]))
            yield _Token("word", value, position - start, word_type=word_type)
        elif char in JS_WHITESPACE:
            position += 1
            yield _Token("space", length=1)
        elif char == "(":
            balance = 0
            while True:
                if chars[position] == ")":
                    balance -= 1
                elif chars[position] == "(":
                    balance += 1
                position += 1
                if balance <= 0 or position >= len(chars):
                    break
            yield _Token("unknown")
        else:
            position += 1
            yield _Token("unknown")
    while True:
        yield _Token("end")


class _Scanner:
    def __init__(self, text: str) -> None:
        self._tokens = _tokens(text)
        self._next = next(self._tokens)

    def peek(self) -> _Token:
        return self._next

    def next(self) -> _Token:
        token, self._next = self._next, next(self._tokens)
        return token

    def skip_symbol(self, symbol: str) -> bool:
        if self._next.is_symbol(symbol):
            self.next()
            return True
        return False


def _between(value: int, low: int, high: int) -> bool:
    return low <= value <= high


def _is_day(value: int) -> bool:
    return _between(value, 1, 31)


def _is_month(value: int) -> bool:
    return _between(value, 1, 12)


def _is_minute(value: int) -> bool:
    return _between(value, 0, 59)


def _is_hour(value: int) -> bool:
    return _between(value, 0, 23)


def _milliseconds(token: _Token) -> int:
    """The first three significant digits of a fraction, from its value and length."""
    value, length = token.value, token.length
    if length == 1:
        return value * 100
    if length == 2:
        return value * 10
    length = min(length, _MAX_SIGNIFICANT_DIGITS)
    while length > 3:
        value //= 10
        length -= 1
    return value


class _Day:
    def __init__(self) -> None:
        self.parts: list[int] = []
        self.named_month: int | None = _NONE
        self.iso = False

    def add(self, value: int) -> bool:
        if len(self.parts) >= 3:
            return False
        self.parts.append(value)
        return True

    def write(self) -> tuple[int, int, int] | None:
        if not self.parts:
            return None
        first, second, third = ([*self.parts, 1, 1])[:3]
        year = 0
        if self.named_month is None:
            if self.iso or not _is_day(first):
                year, month, day = first, second, third
            else:
                month, day, year = first, second, third
        else:
            month = self.named_month
            if not _is_day(first):
                year, day = first, second
            else:
                day, year = first, second
        if not self.iso:
            if _between(year, 0, 49):
                year += 2000
            elif _between(year, 50, 99):
                year += 1900
        if not _is_month(month) or not _is_day(day):
            return None
        return year, month, day


class _Time:
    def __init__(self) -> None:
        self.parts: list[int] = []
        self.hour_offset: int | None = _NONE

    def is_empty(self) -> bool:
        return not self.parts

    def is_expecting(self, value: int) -> bool:
        index = len(self.parts)
        return (
            (index == 1 and _is_minute(value))
            or (index == 2 and _is_minute(value))
            or (index == 3 and _between(value, 0, 999))
        )

    def add(self, value: int) -> bool:
        if len(self.parts) >= 4:
            return False
        self.parts.append(value)
        return True

    def add_final(self, value: int) -> bool:
        if not self.add(value):
            return False
        self.parts += [0] * (4 - len(self.parts))
        return True

    def write(self) -> tuple[int, int, int, int] | None:
        hour, minute, second, millisecond = ([*self.parts, 0, 0, 0, 0])[:4]
        if self.hour_offset is not None:
            if not _between(hour, 0, 12):
                return None
            hour = hour % 12 + self.hour_offset
        if not (
            _is_hour(hour)
            and _is_minute(minute)
            and _is_minute(second)
            and _between(millisecond, 0, 999)
        ) and (hour != 24 or minute or second or millisecond):
            return None
        return hour, minute, second, millisecond


class _Zone:
    def __init__(self) -> None:
        self.sign: int | None = _NONE
        self.hour: int | None = _NONE
        self.minute: int | None = _NONE

    def set(self, offset_hours: int) -> None:
        self.sign = -1 if offset_hours < 0 else 1
        self.hour = offset_hours * self.sign
        self.minute = 0

    def is_expecting(self, value: int) -> bool:
        return self.hour is not None and self.minute is None and _is_minute(value)

    def is_utc(self) -> bool:
        return self.hour == 0 and self.minute == 0

    def write(self) -> int | None:
        """The offset in seconds; 0 for local time, which is UTC here; None if invalid."""
        if self.sign is None:
            return 0
        # V8 sums in unsigned 32-bit arithmetic, so a huge hour wraps around.
        total = ((self.hour or 0) * 3600 + (self.minute or 0) * 60) % 2**32
        if total > _SMI_MAX:
            return None
        return -total if self.sign < 0 else total


_WORD_BREAKS = JS_WHITESPACE - {"\u2028", "\u2029"}
"""V8 ends a date word at white space but not at a line or paragraph separator."""
_FAIL = _Token("invalid")
_END = _Token("end")


class _Parser:
    def __init__(self, text: str) -> None:
        self.scanner = _Scanner(text)
        self.day = _Day()
        self.time = _Time()
        self.zone = _Zone()

    def parse(self) -> tuple[int, int, int, int, int, int, int, int] | None:
        token = self._es5()
        if token.kind == "invalid":
            return None
        if not self._legacy(token):
            return None
        day = self.day.write()
        time = self.time.write()
        offset = self.zone.write()
        if day is None or time is None or offset is None:
            return None
        return (*day, *time, offset)

    def _es5(self) -> _Token:
        """``[+-yy]yyyy[-MM[-DD]][THH:mm[:ss[.sss]][Z|+-hh:mm|+-hhmm]]``; the first token
        it cannot take goes on to the legacy grammar, a malformed time fails outright."""
        scanner, day, time, zone = self.scanner, self.day, self.time, self.zone
        if scanner.peek().is_sign():
            sign_token = scanner.next()
            if not scanner.peek().is_number(6):
                return sign_token
            year = scanner.next().value
            if sign_token.sign() < 0 and year == 0:
                return sign_token
            day.add(sign_token.sign() * year)
        elif scanner.peek().is_number(4):
            day.add(scanner.next().value)
        else:
            return scanner.next()
        if scanner.skip_symbol("-"):
            if not scanner.peek().is_number(2) or not _is_month(scanner.peek().value):
                return scanner.next()
            day.add(scanner.next().value)
            if scanner.skip_symbol("-"):
                if not scanner.peek().is_number(2) or not _is_day(scanner.peek().value):
                    return scanner.next()
                day.add(scanner.next().value)
        if not scanner.peek().is_word(_TIME_SEPARATOR):
            if scanner.peek().kind != "end":
                return scanner.next()
        else:
            scanner.next()
            failed = self._es5_time()
            if failed is not None:
                return failed
        if zone.hour is None and time.is_empty():
            zone.set(0)
        day.iso = True
        return _END

    def _es5_time(self) -> _Token | None:
        """``HH:mm[:ss[.sss]][Z|+-hh:mm|+-hhmm]`` after the ``T``; None when it parsed."""
        scanner, time, zone = self.scanner, self.time, self.zone
        if not scanner.peek().is_number(2) or not _between(scanner.peek().value, 0, 24):
            return _FAIL
        hour_is_24 = scanner.peek().value == 24
        time.add(scanner.next().value)
        if not scanner.skip_symbol(":"):
            return _FAIL
        if (
            not scanner.peek().is_number(2)
            or not _is_minute(scanner.peek().value)
            or (hour_is_24 and scanner.peek().value > 0)
        ):
            return _FAIL
        time.add(scanner.next().value)
        if scanner.skip_symbol(":"):
            if (
                not scanner.peek().is_number(2)
                or not _is_minute(scanner.peek().value)
                or (hour_is_24 and scanner.peek().value > 0)
            ):
                return _FAIL
            time.add(scanner.next().value)
            if scanner.skip_symbol("."):
                if not scanner.peek().is_number() or (hour_is_24 and scanner.peek().value > 0):
                    return _FAIL
                time.add(_milliseconds(scanner.next()))
        if scanner.peek().is_z():
            scanner.next()
            zone.set(0)
        elif scanner.peek().is_sign():
            zone.sign = scanner.next().sign()
            if scanner.peek().is_number(4):
                hour, minute = divmod(scanner.next().value, 100)
                if not _is_hour(hour) or not _is_minute(minute):
                    return _FAIL
                zone.hour, zone.minute = hour, minute
            else:
                if not scanner.peek().is_number(2) or not _is_hour(scanner.peek().value):
                    return _FAIL
                zone.hour = scanner.next().value
                if not scanner.skip_symbol(":"):
                    return _FAIL
                if not scanner.peek().is_number(2) or not _is_minute(scanner.peek().value):
                    return _FAIL
                zone.minute = scanner.next().value
        if scanner.peek().kind != "end":
            return _FAIL
        return None

    def _legacy(self, token: _Token) -> bool:
        scanner, day, time, zone = self.scanner, self.day, self.time, self.zone
        has_read_number = bool(day.parts)
        while token.kind != "end":
            if token.kind == "number":
                has_read_number = True
                if not self._legacy_number(token.value):
                    return False
            elif token.kind == "word":
                if token.word_type == _AM_PM and not time.is_empty():
                    time.hour_offset = token.value
                elif token.word_type == _MONTH_NAME:
                    day.named_month = token.value
                    scanner.skip_symbol("-")
                elif token.word_type == _TIME_ZONE_NAME and has_read_number:
                    zone.set(token.value)
                elif has_read_number or scanner.peek().is_number():
                    return False
            elif token.is_sign() and (zone.is_utc() or not time.is_empty()):
                zone.sign = token.sign()
                value = length = 0
                if scanner.peek().is_number():
                    number = scanner.next()
                    value, length = number.value, number.length
                has_read_number = True
                if scanner.peek().is_symbol(":"):
                    zone.hour, zone.minute = value, None
                elif length in (1, 2):
                    zone.hour, zone.minute = value, 0
                elif length in (3, 4):
                    zone.hour, zone.minute = divmod(value, 100)
                else:
                    return False
            elif (token.is_sign() or token.is_symbol(")")) and has_read_number:
                return False
            token = scanner.next()
        return True

    def _legacy_number(self, value: int) -> bool:
        """A number is a time part before ``:``, a fraction after ``.``, the minutes of
        an offset, the last time part, or else a day part; False when the date fails."""
        scanner, day, time, zone = self.scanner, self.day, self.time, self.zone
        if scanner.skip_symbol(":"):
            if scanner.skip_symbol(":"):
                if not time.is_empty():
                    return False
                time.add(value)
                time.add(0)
            else:
                if not time.add(value):
                    return False
                if scanner.peek().is_symbol("."):
                    scanner.next()
        elif scanner.skip_symbol(".") and time.is_expecting(value):
            time.add(value)
            if not scanner.peek().is_number():
                return False
            time.add_final(_milliseconds(scanner.next()))
        elif zone.is_expecting(value):
            zone.minute = value
        elif time.is_expecting(value):
            time.add_final(value)
            following = scanner.peek()
            if not (following.kind in ("end", "space") or following.is_z() or following.is_sign()):
                return False
        else:
            if not day.add(value):
                return False
            scanner.skip_symbol("-")
        return True
