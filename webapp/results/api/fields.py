"""Input fields that take JSON's types as the schema states them: DRF's own coerce ("8" is an
integer, 8 a string, 1 a boolean, 5 a UUID), so a body the schema calls invalid would be
stored. A wrong type is a 400 naming the field."""

import math
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictIntegerField(serializers.IntegerField):
    """An integer in JSON: "8", 8.0 and true are wrong types, not numbers."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A finite JSON number: strings, booleans, NaN and infinities are refused."""

    default_error_messages = {"not_finite": "A finite number is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not math.isfinite(data):
            self.fail("not_finite")
        return super().to_internal_value(data)


class JSONStringMixin:
    """A JSON string: 8, 8.0 and true are not text (DRF's CharField and UUIDField take them)."""

    default_error_messages = {"not_a_string": "A string is required."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictCharField(JSONStringMixin, serializers.CharField):
    """Text as sent: no whitespace trimmed (" " is not blank, " a" is not "a")."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


class FreeTextField(StrictCharField):
    """Text such as a tool's error message: a NUL in it (which PostgreSQL cannot store) becomes
    U+FFFD rather than costing the measurement that carries it a 400."""

    def to_internal_value(self, data):
        return super().to_internal_value(data).replace("\x00", "\ufffd")


class ErrorTextField(FreeTextField):
    """What went wrong, as a tool said it: free text, empty unless given."""

    def __init__(self, **kwargs):
        kwargs = {"allow_blank": True, "required": False, "default": "", **kwargs}
        super().__init__(max_length=100_000, **kwargs)


class StrictRegexField(JSONStringMixin, serializers.RegexField):
    """Text as sent, matching `regex` (no whitespace trimmed first)."""

    def __init__(self, regex, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(regex, **kwargs)


class StrictUUIDField(JSONStringMixin, serializers.UUIDField):
    pass


# The first and the last day Python's datetime holds: there, an offset can take a moment's
# UTC out of its range (0001-01-01T00:30+01:00 is in year 0), which no read could give back.
# The schema leaves them out too, so what it calls a valid moment is one we can store.
EDGE_DAYS = re.compile(r"^(?:0001-01-01|9999-12-31)")


@extend_schema_field(
    {"type": "string", "format": "date-time", "pattern": r"^(?!0001-01-01|9999-12-31)"}
)
class MomentField(serializers.DateTimeField):
    """An ISO 8601 date and time, on none of EDGE_DAYS."""

    default_error_messages = {
        "edge_day": "A date and time from 0001-01-02 to 9999-12-30 (UTC may be out of range "
        "on the first and last days)."
    }

    def to_internal_value(self, value):
        if isinstance(value, str) and EDGE_DAYS.match(value):
            self.fail("edge_day")
        return super().to_internal_value(value)


class StrictBooleanField(serializers.BooleanField):
    """true or false in JSON: "true", 1 and "yes" are other types."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


# Spaces and control characters spelled out, not \s: the schema's (ECMA-262) \s and Python's
# differ (\x1c-\x1f, \x85, \ufeff), so a name one takes the other must take too.
NOT_IN_A_NAME = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff/?#%\\"


class NodeNameField(StrictRegexField):
    """A host name or address (IPv6 too); no '/', '?', '#', '%', spaces or control characters:
    it goes in URLs."""

    def __init__(self, **kwargs):
        super().__init__(
            rf"^[^{NOT_IN_A_NAME}]+$",
            max_length=253,
            error_messages={"invalid": "A node name: no spaces, '/', '?', '#', '%%' or '\\'."},
            **kwargs,
        )


class ServerField(StrictRegexField):
    """A data server as a client saw it: "host:port" (a node name, or [IPv6], and a port)."""

    def __init__(self, **kwargs):
        super().__init__(
            rf"^[^{NOT_IN_A_NAME}]+:[0-9]{{1,5}}$",
            max_length=261,
            error_messages={"invalid": "A data server as host:port (no spaces, '/', '?', '#')."},
            **kwargs,
        )
