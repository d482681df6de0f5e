"""Renderers: CSV (?format=csv: a header from the first row's keys, one line per row) and
fast JSON for the large aggregate answers."""

import csv
import io

import orjson
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.utils import encoders


def csv_text(rows, header: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class CSVRenderer(BaseRenderer):
    """The rows of an answer as CSV (a paginated answer's `results`), columns in the order
    of the first row's keys, "\\n" line ends; for no rows, the view's `csv_columns` alone
    (nothing at all if it has none).

    Kept rather than djangorestframework-csv's CSVRenderer, which sorts the columns by name,
    ends lines with CRLF, flattens nested values into columns of their own ("window.0"),
    and took twice as long (870 rows: 3.5 against 1.7 ms).
    """

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        if isinstance(data, dict):
            data = data.get("results", [data])
        rows = [r if isinstance(r, dict) else {"value": r} for r in data]
        view = (renderer_context or {}).get("view")
        header = list(rows[0]) if rows else list(getattr(view, "csv_columns", []))
        if not header:
            return b""
        return csv_text(rows, header).encode(self.charset)


_FALLBACK = encoders.JSONEncoder()
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z
# Most answers have only string keys, which orjson encodes faster without OPT_NON_STR_KEYS
# (the same text); an answer with other keys is encoded again with it.
_ORJSON_STR_KEYS_OPTIONS = orjson.OPT_UTC_Z


class EncodedJSON(bytes):
    """An answer already encoded by json_bytes() (a cached one): FastJSONRenderer sends it
    as it is."""


def json_bytes(data) -> bytes:
    """`data` as FastJSONRenderer sends it (compact): what a cached answer may hold as is."""
    try:
        text = orjson.dumps(data, default=_FALLBACK.default, option=_ORJSON_STR_KEYS_OPTIONS)
    except orjson.JSONEncodeError:
        text = orjson.dumps(data, default=_FALLBACK.default, option=_ORJSON_OPTIONS)
    # As DRF does: JSON that is also valid JavaScript. (Looking for the lead byte first:
    # one memchr() over half a megabyte rather than two searches for three-byte needles.)
    if b"\xe2" in text and (b"\xe2\x80\xa8" in text or b"\xe2\x80\xa9" in text):
        text = text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return text


class FastJSONRenderer(JSONRenderer):
    """DRF's compact JSON, encoded by orjson: the same text for our data, several times faster.

    Grids are half a megabyte of JSON; the standard library spends longer encoding one than
    PostgreSQL spends computing it. Types orjson does not know (lazy strings, Decimal) go
    through DRF's encoder; an indented answer (`Accept: application/json; indent=2`) is DRF's.
    (A NaN becomes null rather than an error.) An EncodedJSON answer is sent as it is.

    Kept rather than drf-orjson-renderer's ORJSONRenderer, which differs in what it sends
    (U+2028/U+2029 unescaped, `indent` ignored, unknown types as null) and was slower on our
    answers (p50 0.33 against 0.24 ms for a 553 KB MaDDash grid, 0.10 against 0.06 ms for
    throughput-vs-latency).
    """

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        if (
            self.get_indent(accepted_media_type, renderer_context or {}) is not None
            or self.ensure_ascii
            or not self.compact
        ):
            if isinstance(data, EncodedJSON):
                data = orjson.loads(data)
            return super().render(data, accepted_media_type, renderer_context)
        if isinstance(data, EncodedJSON):
            return bytes(data)
        return json_bytes(data)
