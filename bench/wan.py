"""WAN emulation benchmark (not a test): how faithful and how cheap is the lab's delay line?

On a real 4-node lab (network namespaces; needs root) whose pairs have RTTs of 10, 20, 30,
50, 60 and 100 ms (`lab up --rtt`, the delay program in the router), measured in one run:
- RTT per ordered pair, by ping (50 at 20/s) and by TCP connect (20, the orchestrator's
  probe), against the target: median and p95 error (target: median error <= 1 ms);
- one TCP stream per pair with the receive window clamped: throughput / (window / RTT)
  (target 0.8-1.1), the window being what the receiver advertised (TCP_INFO's snd_wnd;
  Linux 6.x advertises about twice the TCP_WINDOW_CLAMP);
- the delay program's CPU (one core = 100%) while one stream, paced by the sender's kernel
  (SO_MAX_PACING_RATE), moves 1 Gbit/s;
- 8 streams at once through the delay line (10 ms pair) beside the same 8 streams over the
  same router without it (host -> node, not delayed): the aggregate rate and their ratio
  (target >= 5 Gbit/s through the delay line).

    .venv/bin/python bench/wan.py [--seconds 5] [--window 1MiB]

The lab is started and stopped here (prefix `tpcwb`, subnet 10.99.130+); exits 1 if a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ca.authority import CertificateAuthority
from orchestrator.lab.lifecycle import run_record_path, start_lab, stop_lab
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import LabNetwork
from orchestrator.sizes import format_size, parse_size

REPO = Path(__file__).resolve().parents[1]
NETWORK = LabNetwork(prefix="tpcwb", subnet_offset=130)
PAIRS = {
    ("lab-1", "lab-2"): 10,
    ("lab-3", "lab-4"): 20,
    ("lab-1", "lab-3"): 30,
    ("lab-2", "lab-4"): 50,
    ("lab-1", "lab-4"): 60,
    ("lab-2", "lab-3"): 100,
}
RTT_TARGET_MS = 1.0
RATIO_RANGE = (0.8, 1.1)
AGGREGATE_TARGET_GBPS = 5.0
PORT = 5401
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def in_node(node: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", f"{NETWORK.prefix}-{node}", *argv]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def ping_ms(src: str, address: str) -> list[float]:
    argv = in_node(src, "ping", "-n", "-c", "50", "-i", "0.05", address)
    out = subprocess.run(argv, capture_output=True, text=True)
    return [float(t) for t in re.findall(r"time=([\d.]+) ms", out.stdout)]


def connect_ms(src: str, address: str, port: int) -> list[float]:
    """TCP-connect RTT samples; none when the probe failed (reported as a miss, not a crash)."""
    argv = in_node(src, sys.executable, "-m", "orchestrator.latency", address, str(port))
    out = subprocess.run([*argv, "--count", "20"], capture_output=True, text=True, cwd=REPO)
    try:
        return list(json.loads(out.stdout)["samples_ms"])
    except (ValueError, KeyError, TypeError):
        return []


def shown(values: list[float], figure: str, target: float = 0.0) -> str:
    """A column of the RTT table: the median (minus `target`), the p95 error, or n/a."""
    if not values:
        return "n/a"
    if figure == "p95":
        return f"{percentile([abs(v - target) for v in values], 0.95):.2f}"
    return f"{statistics.median(values) - target:{'+' if target else ''}.2f}"


def rtt_rows(addresses: dict[str, str], https_port: int) -> tuple[list[str], bool]:
    lines, ok = [], True
    row = "{:<16} {:>7} {:>10} {:>9} {:>9} {:>12} {:>11} {:>4}"
    lines.append(
        row.format(
            "pair", "target", "ping med", "ping err", "ping p95", "connect med", "conn p95", "ok"
        )
    )
    for (a, b), target in PAIRS.items():
        for src, dst in ((a, b), (b, a)):
            pings = ping_ms(src, addresses[dst])
            connects = connect_ms(src, addresses[dst], https_port)
            good = (
                bool(pings and connects)
                and abs(statistics.median(pings) - target) <= RTT_TARGET_MS
                and abs(statistics.median(connects) - target) <= RTT_TARGET_MS
            )
            ok &= good
            lines.append(
                row.format(
                    f"{src} -> {dst}", f"{target} ms", shown(pings, "median"),
                    shown(pings, "median", target), shown(pings, "p95", target),
                    shown(connects, "median"), shown(connects, "p95", target),
                    "yes" if good else "NO",
                )
            )  # fmt: skip
    return lines, ok


def serve(node: str, address: str, window: int | None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "orchestrator.lab.tcpload", "serve", "--bind", address]
    argv += ["--port", str(PORT)] + (["--window", str(window)] if window else [])
    server = subprocess.Popen(in_node(node, *argv), cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and "serving" in server.stdout.readline()
    return server


def send(
    src: str | None, address: str, streams: int, seconds: float, max_gbps: float | None = None
) -> dict:
    argv = [sys.executable, "-m", "orchestrator.lab.tcpload", "send", address]
    argv += ["--max-gbps", str(max_gbps)] if max_gbps else []
    argv += ["--port", str(PORT), "--streams", str(streams), "--seconds", str(seconds)]
    argv += ["--warmup", str(min(2.0, seconds / 2))]
    out = subprocess.run(in_node(src, *argv) if src else argv, capture_output=True, text=True,
                         cwd=REPO, check=True)  # fmt: skip
    return json.loads(out.stdout)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def with_cpu(pid: int, run) -> tuple[dict, float]:
    """run()'s result and the delay program's CPU meanwhile, in % of one core."""
    begin, ticks = time.monotonic(), cpu_ticks(pid)
    result = run()
    return result, (cpu_ticks(pid) - ticks) / CLOCK_TICKS / (time.monotonic() - begin) * 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per throughput run")
    parser.add_argument("--window", type=parse_size, default=parse_size("1MiB"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/wan.py needs root (network namespaces)", file=sys.stderr)
        return 1
    home = Path(tempfile.mkdtemp(prefix="tpcbench-wanbench-"))
    home.chmod(0o755)
    matrix = home / "wan.csv"
    matrix.write_text("".join(f"{a},{b},{rtt}\n" for (a, b), rtt in PAIRS.items()))
    CertificateAuthority.init(home / "ca")
    servers: list[subprocess.Popen[str]] = []
    try:
        print("wan: starting a 4-node lab with the delay line", file=sys.stderr)
        inventory = start_lab(home, 4, 1 << 20, network=NETWORK, rtt=str(matrix))
        record = LabRun.load(run_record_path(home))
        assert record.delay_line is not None
        pid = record.delay_line.pid
        addresses = {n.name: n.address for n in inventory.nodes}
        print("wan: RTT per ordered pair", file=sys.stderr)
        rtt_lines, rtt_ok = rtt_rows(addresses, inventory.nodes[0].ports["https"])

        print("wan: one stream per pair", file=sys.stderr)
        servers = [serve(n, a, args.window) for n, a in addresses.items()]
        stream_lines, stream_ok = [], True
        stream_windows: dict[tuple[str, str], int] = {}
        row = "{:<16} {:>6} {:>10} {:>13} {:>11} {:>7} {:>4}"
        stream_lines.append(
            row.format("pair", "RTT", "window", "window/RTT", "measured", "ratio", "ok")
        )
        for (src, dst), rtt in PAIRS.items():
            result = send(src, addresses[dst], 1, args.seconds)
            window = stream_windows[(src, dst)] = result["window_bytes"][0]
            predicted = window * 8 / (rtt / 1000) / 1e9
            ratio = result["gbps"] / predicted
            good = RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]
            stream_ok &= good
            stream_lines.append(
                row.format(
                    f"{src} -> {dst}", f"{rtt} ms", f"{window / 2**20:.2f} MiB",
                    f"{predicted:.3f} G", f"{result['gbps']:.3f} G", f"{ratio:.3f}",
                    "yes" if good else "NO",
                )
            )  # fmt: skip
        for server in servers:
            server.kill()
            server.wait()

        # 1 Gbit/s on the 10 ms pair: the sender paces itself (SO_MAX_PACING_RATE)
        servers = [serve("lab-2", addresses["lab-2"], None)]
        one_gbit, cpu_1g = with_cpu(
            pid, lambda: send("lab-1", addresses["lab-2"], 1, args.seconds, max_gbps=1.0)
        )
        delayed, cpu_8 = with_cpu(pid, lambda: send("lab-1", addresses["lab-2"], 8, args.seconds))
        plain = send(None, addresses["lab-2"], 8, args.seconds)  # host -> node: not delayed
    finally:
        for server in servers:
            server.kill()
            server.wait()
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)

    print(f"wan: delay line in the router, RTT targets {sorted(set(PAIRS.values()))} ms")
    print(f"RTT (target: median error <= {RTT_TARGET_MS:g} ms):")
    print("\n".join("  " + line for line in rtt_lines))
    print(
        f"one stream, receive window clamped to {format_size(args.window)} "
        f"(target: measured / (window / RTT) in {RATIO_RANGE[0]}-{RATIO_RANGE[1]}):"
    )
    print("\n".join("  " + line for line in stream_lines))
    print(
        f"delay program CPU at {one_gbit['gbps']:.2f} Gbit/s (one stream, 10 ms): "
        f"{cpu_1g:.0f}% of one core ({cpu_1g / max(one_gbit['gbps'], 1e-9):.0f}% per Gbit/s)"
    )
    ratio = delayed["gbps"] / plain["gbps"] if plain["gbps"] else 0.0
    aggregate_ok = delayed["gbps"] >= AGGREGATE_TARGET_GBPS
    print(
        f"8 streams (target >= {AGGREGATE_TARGET_GBPS:g} Gbit/s through the delay line): "
        f"delayed 10 ms {delayed['gbps']:.2f} Gbit/s (delay program {cpu_8:.0f}% of a core), "
        f"same router undelayed {plain['gbps']:.2f} Gbit/s, ratio {ratio:.2f}, "
        f"{delayed['gbps'] / AGGREGATE_TARGET_GBPS:.2f}x the target: "
        + ("yes" if aggregate_ok else "NO")
    )
    ok = rtt_ok and stream_ok and aggregate_ok
    print(f"wan: {'every target met' if ok else 'a target was missed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
