"""CSV output (?format=csv): a header from the first row's keys, one line per row."""

import csv
import io

from rest_framework.renderers import BaseRenderer


def csv_text(rows, header: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        if isinstance(data, dict):
            data = data.get("results", [data])
        rows = [r if isinstance(r, dict) else {"value": r} for r in data]
        if not rows:
            return b""
        header = list(rows[0]) if rows else []
        return csv_text(rows, header).encode(self.charset)
