"""Bulk TCP between two lab nodes, for checking the WAN emulation (tests and bench/wan.py).

    python -m orchestrator.lab.tcpload serve --bind ADDR [--port 5201] [--window BYTES]
    python -m orchestrator.lab.tcpload send ADDR [--port 5201] [--streams N] [--seconds S]
                                                 [--warmup S] [--max-gbps RATE]

`serve` swallows what it is sent; `--window` clamps the receive window it advertises
(TCP_WINDOW_CLAMP), so one stream's throughput is bounded by window/RTT. `send` pushes data
for `--seconds` on N streams and prints one JSON object: the rate over the time after
`--warmup` seconds (the kernel's count of acknowledged bytes, so slow start is left out),
each stream's smoothed RTT as TCP saw it, and the CPU seconds this process used.
Run each side in its node's namespace: `ip netns exec NS python -m orchestrator.lab.tcpload`.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

DEFAULT_PORT = 5201
CHUNK = 1 << 20
TCP_INFO_LEN = 256
# struct tcp_info (include/uapi/linux/tcp.h): offsets of tcpi_rtt (µs), tcpi_bytes_acked and
# tcpi_snd_wnd (the receive window the peer advertises, bytes; Linux >= 5.4)
TCPI_RTT, TCPI_BYTES_ACKED, TCPI_SND_WND = 68, 120, 228
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)  # Linux, bytes per second


def tcp_info(sock: socket.socket) -> tuple[float, int, int]:
    """(smoothed RTT in ms, bytes acknowledged so far, peer's window) from TCP_INFO."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    rtt_us = struct.unpack_from("I", raw, TCPI_RTT)[0]
    acked = struct.unpack_from("Q", raw, TCPI_BYTES_ACKED)[0]
    window = struct.unpack_from("I", raw, TCPI_SND_WND)[0] if len(raw) >= TCPI_SND_WND + 4 else 0
    return rtt_us / 1000.0, acked, window


def serve(bind: str, port: int, window: int | None) -> None:
    """Accept connections until killed; read and drop everything each one sends."""
    listener = socket.create_server((bind, port), reuse_port=False, backlog=64)
    if window:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, window)
    print(f"tcpload: serving on {bind}:{port}", flush=True)
    while True:
        conn, _ = listener.accept()
        if window:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, window)
        threading.Thread(target=_drain, args=(conn,), daemon=True).start()


def _drain(conn: socket.socket) -> None:
    buffer = bytearray(CHUNK)
    with conn:
        while conn.recv_into(buffer):
            pass


class _Stream(threading.Thread):
    def __init__(
        self, address: str, port: int, warm_at: float, end_at: float, max_gbps: float | None
    ) -> None:
        super().__init__(daemon=True)
        self.target = (address, port)
        self.max_gbps = max_gbps
        self.warm_at, self.end_at = warm_at, end_at
        self.acked = 0
        self.seconds = 0.0
        self.rtt_ms = 0.0
        self.window = 0
        self.error: str | None = None

    def run(self) -> None:
        try:
            self._send()
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _send(self) -> None:
        payload = memoryview(bytes(CHUNK))
        with socket.create_connection(self.target, timeout=30) as sock:
            if self.max_gbps:  # TCP paces itself to this rate
                sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(self.max_gbps * 1e9 / 8))
            warm: tuple[float, int] | None = None
            while (now := time.monotonic()) < self.end_at:
                if warm is None and now >= self.warm_at:
                    warm = (now, tcp_info(sock)[1])
                sock.send(payload)
            self.rtt_ms, acked, self.window = tcp_info(sock)
            if warm is not None:
                self.seconds = time.monotonic() - warm[0]
                self.acked = acked - warm[1]
            sock.shutdown(socket.SHUT_WR)


def send(
    address: str,
    port: int,
    streams: int,
    seconds: float,
    warmup: float,
    max_gbps: float | None = None,
) -> dict[str, Any]:
    """Push data on `streams` connections (each paced to at most `max_gbps`); the rate counts
    only what was acked after warmup."""
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    begin = time.monotonic()
    workers = [
        _Stream(address, port, begin + warmup, begin + seconds, max_gbps) for _ in range(streams)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    errors = [w.error for w in workers if w.error]
    rates = [w.acked * 8 / w.seconds / 1e9 if w.seconds > 0 else 0.0 for w in workers]
    return {
        "address": address,
        "port": port,
        "streams": streams,
        "seconds": seconds,
        "warmup": warmup,
        "gbps": round(sum(rates), 6),
        "stream_gbps": [round(r, 6) for r in rates],
        "srtt_ms": [round(w.rtt_ms, 3) for w in workers],
        "window_bytes": [w.window for w in workers],
        "cpu_seconds": round(
            cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 3
        ),
        "error": errors[0] if errors else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.lab.tcpload", description=__doc__.split("\n\n")[0]
    )
    actions = parser.add_subparsers(dest="action", required=True)
    server = actions.add_parser("serve", help="receive and drop bulk data")
    server.add_argument("--bind", required=True, help="address to listen on (the node's)")
    server.add_argument("--port", type=int, default=DEFAULT_PORT)
    server.add_argument("--window", type=int, default=None, help="receive window clamp, bytes")
    sender = actions.add_parser("send", help="send bulk data, print the rate as JSON")
    sender.add_argument("address")
    sender.add_argument("--port", type=int, default=DEFAULT_PORT)
    sender.add_argument("--streams", type=int, default=1)
    sender.add_argument("--seconds", type=float, default=5.0)
    sender.add_argument("--warmup", type=float, default=2.0, help="seconds left out of the rate")
    sender.add_argument("--max-gbps", type=float, default=None, help="pace each stream to this")
    args = parser.parse_args(argv)
    if args.action == "serve":
        serve(args.bind, args.port, args.window)
        return 0
    if not 0 <= args.warmup < args.seconds or args.streams < 1:
        parser.error("need --streams >= 1 and 0 <= --warmup < --seconds")
    result = send(args.address, args.port, args.streams, args.seconds, args.warmup, args.max_gbps)
    print(json.dumps(result))
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
