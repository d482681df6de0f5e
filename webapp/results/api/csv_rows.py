"""Streamed CSV of measurements, transfers or redirector lookups, flat (no pagination: a
client wants the lot)."""

import csv
import json

from django.http import StreamingHttpResponse

from webapp.results.phases import ordered_phases

MEASUREMENT_COLUMNS = {
    "uuid": "uuid",
    "campaign": "campaign__uuid",
    "src": "src__name",
    "dst": "dst__name",
    "protocol": "protocol",
    "streams": "streams",
    "transfers": "transfer_count",
    "file_size": "file_size",
    "rtt_ms": "rtt_ms",
    "rtt_target_ms": "rtt_target_ms",
    "started": "started",
    "finished": "finished",
    "throughput_gbps": "throughput_gbps",
    "makespan_gbps": "makespan_gbps",
    "succeeded": "succeeded",
    "failed": "failed",
    # Newer columns go last: readers that count columns keep working.
    "auth": "auth",
    "client": "client",
    "tcp_buffer_bytes": "tcp_buffer_bytes",
    "checksum": "checksum",
    "scope": "scope",
    "src_site": "src_site",
    "dst_site": "dst_site",
    "hosts": "hosts",
}
LOOKUP_COLUMNS = {
    "uuid": "uuid",
    "campaign": "campaign__uuid",
    "protocol": "protocol",
    "entry": "entry",
    "level": "level",
    "site": "site",
    "level_rtt_ms": "level_rtt_ms",
    "started": "started",
    "seconds": "seconds",
    "hops": "hops",
    "data_server": "data_server",
    "outcome": "outcome",
    "error_class": "error_class",
    "message": "message",
    "steps": "steps",
}
TRANSFER_COLUMNS = {
    "measurement": "measurement__uuid",
    "src": "measurement__src__name",
    "dst": "measurement__dst__name",
    "protocol": "measurement__protocol",
    "streams": "measurement__streams",
    "file_size": "measurement__file_size",
    "index": "index",
    "start": "start",
    "end": "end",
    "bytes": "bytes",
    "outcome": "outcome",
    "error_class": "error_class",
    "message": "message",
    "auth": "measurement__auth",
    "client": "measurement__client",
    "phases": "phases",
    "streaming_gbps": "streaming_gbps",
    "checksum": "measurement__checksum",
    "source_server": "source_server",
    "destination_server": "destination_server",
    "redirects": "redirects",
}


class _Echo:
    def write(self, value: str) -> str:
        return value


def _cell(value) -> str:
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, dict):  # phases: JSON, in phase order
        return json.dumps(ordered_phases(value), separators=(",", ":"))
    if isinstance(value, list):  # a lookup's steps: JSON
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def stream_csv(queryset, columns: dict[str, str], filename: str) -> StreamingHttpResponse:
    writer = csv.writer(_Echo(), lineterminator="\n")
    order = ["started", "id"] if "started" in columns else ["measurement__started", "index"]
    values = queryset.order_by(*order).values_list(*columns.values())

    def lines():
        yield writer.writerow(list(columns))
        for row in values.iterator(chunk_size=2000):
            yield writer.writerow([_cell(v) for v in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
