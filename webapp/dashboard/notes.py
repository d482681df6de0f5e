"""The plot pages' note on the lab's TCP buffer: `results.selectors.buffer_limits`' answer,
worded for the page (`_buffer_note.html` lays it out)."""

from __future__ import annotations

from webapp.results.selectors.buffer_limits import buffer_limits, buffer_note


def _span(low: float, high: float, text) -> str:
    """'46' or '46-420' (an en dash), each end written by `text`."""
    return text(low) if text(low) == text(high) else f"{text(low)}\u2013{text(high)}"


def _rate(gbps: float) -> str:
    return f"{gbps * 1000:.0f} Mbit/s" if gbps < 1 else f"{gbps:.3g} Gbit/s"


def _rates(low: float, high: float) -> str:
    """'46-420 Mbit/s', '1.2-9.8 Gbit/s' or '420 Mbit/s to 1.2 Gbit/s'."""
    if high < 1:
        return _span(low * 1000, high * 1000, lambda v: f"{v:.0f}") + " Mbit/s"
    if low >= 1:
        return _span(low, high, lambda v: f"{v:.3g}") + " Gbit/s"
    return f"{_rate(low)} to {_rate(high)}"


def buffer_note_context(
    *, streams: int, window: str, protocol: str | None, auth: str, client: str, checksum: str
) -> dict | None:
    """The note's words and figures, or None when no shown pair is limited by the buffer."""
    limits = buffer_limits(
        streams=streams,
        window=window,
        protocol=protocol,
        auth=auth,
        client=client,
        checksum=checksum,
    )
    note = buffer_note(limits)
    if note is None:
        return None
    k_low, k_high = note["transfers"]
    below = []
    if note["below_link"]:
        below.append("the link capacity")
    if note["below_more_streams"]:
        below.append("what the same pair reached with more streams")
    return {
        "points": "single-stream" if streams == 1 else f"{streams}-stream",
        "pairs": note["pairs"],
        "checked": note["checked"],
        "buffer": _span(*note["buffer_mib"], lambda v: f"{v:g}") + " MiB",
        "rtt": _span(*note["rtt_ms"], lambda v: f"{v:.0f}") + " ms",
        "stream_ceiling": _rates(*note["stream_ceiling_gbps"]),
        "transfers": _span(k_low, k_high, str),
        "streams": streams,
        "multiple": _span(k_low * streams, k_high * streams, str),
        "below": " or ".join(below),
    }
