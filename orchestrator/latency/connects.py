"""The one measuring function: time TCP connects from where this process stands."""

from __future__ import annotations

import socket
import statistics
import time
from dataclasses import dataclass, field

DEFAULT_COUNT = 5
CONNECT_TIMEOUT = 3.0


@dataclass(frozen=True)
class RttResult:
    """Connect times to one target; `error` says why none succeeded (a failure is data)."""

    host: str
    port: int
    samples_ms: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def rtt_ms(self) -> float | None:
        return round(statistics.median(self.samples_ms), 4) if self.samples_ms else None

    @property
    def rounded_samples(self) -> list[float]:
        return [round(s, 4) for s in self.samples_ms]


def measure_connects(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> RttResult:
    """Time `count` TCP connects to `address`:`port`; failed connects are left out."""
    samples: list[float] = []
    error = None
    for _ in range(count):
        begin = time.perf_counter()
        try:
            with socket.create_connection((address, port), timeout=timeout):
                samples.append((time.perf_counter() - begin) * 1000.0)
        except OSError as exc:
            error = f"connect to {address} port {port} failed: {type(exc).__name__}: {exc}"
    return RttResult(address, port, samples, None if samples else error)


def connect_samples_ms(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> list[float]:
    """Milliseconds each of `count` TCP connects took; failed connects are left out."""
    return measure_connects(address, port, count, timeout).samples_ms


def probe(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> dict:
    """The probe's result as the module's command line prints it."""
    result = measure_connects(address, port, count, timeout)
    return {
        "address": address,
        "port": port,
        "samples_ms": result.rounded_samples,
        "rtt_ms": result.rtt_ms,
    }
