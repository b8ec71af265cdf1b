"""``python -m benchmarks.hostile_frames [--seconds S]``: what packed frames nobody agreed to cost.

Issue 34, item 4. Two figures, each a few seconds on 127.0.0.1:

* **Client**: the CPU time and the memory one 118-byte-class packed frame (``OGZ1``, a zstd
  frame declaring 64 MiB of zeros) costs a single session that agreed to plain binary
  frames, before the error (``BINARY.parse_reply``: what a single env does with a reply).
* **Server**: a bystander's median step time (a single CartPole session, JSON) while a
  hostile client floods the same server process (``--workers 1 --max-message-size 64 MiB``)
  with small packed
  batch frames that each declare a large content, against the same bystander alone.

Run it on this tree for "after", and with ``PYTHONPATH`` on an older tree for "before"; the
load average is printed beside the figures (compare within one run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import threading
import time
import tracemalloc
from collections.abc import Sequence

import zstandard
from websockets.sync.client import connect

from openenv_gym.errors import OpenEnvGymError
from openenv_gym.providers import LocalServerProcess
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL, batch_open_message
from openenv_gym.wire.compressed import COMPRESSED_MAGIC
from openenv_gym.wire.encoding import BINARY

#: The server's message limit in the flood (the issue's case).
SERVER_LIMIT = 64 * 1024 * 1024


def packed_zeros(size: int) -> bytes:
    """A packed frame that declares ``size`` bytes of zeros (a few hundred bytes on the wire)."""
    return COMPRESSED_MAGIC + zstandard.ZstdCompressor(level=1).compress(b"\0" * size)


def client_cost() -> tuple[int, float, float]:
    """(frame bytes, CPU seconds, MiB allocated at the peak) of one packed frame on a binary
    session that never agreed to compression."""
    frame = packed_zeros(64 * 1024 * 1024 - 1024)
    tracemalloc.start()
    cpu = time.process_time()
    with contextlib.suppress(OpenEnvGymError):
        BINARY.parse_reply(frame)
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return len(frame), cpu, peak / 2**20


def bystander_steps(url: str, seconds: float) -> list[float]:
    """Step times of a plain JSON CartPole session for ``seconds``."""
    times: list[float] = []
    with connect(f"{url.replace('http', 'ws', 1)}/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        ws.recv()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.perf_counter()
            ws.send(json.dumps({"type": "step", "data": {"action": 0}}))
            reply = json.loads(ws.recv())
            times.append(time.perf_counter() - started)
            if reply["data"].get("done"):
                ws.send(json.dumps({"type": "reset", "data": {}}))
                ws.recv()
    return times


def flood(url: str, stop: threading.Event, sent: list[int]) -> None:
    """A hostile batch client: opens with compression, then sends packed frames nonstop."""
    frame = packed_zeros(SERVER_LIMIT - 1024)
    with connect(
        f"{url.replace('http', 'ws', 1)}/ws", subprotocols=[BATCH_SUBPROTOCOL], max_size=None
    ) as ws:  # type: ignore[list-item]
        ws.send(json.dumps(batch_open_message(1, None, None, "zstd")))
        ws.recv()
        while not stop.is_set():
            ws.send(frame)
            ws.recv()
            sent[0] += 1


def main(argv: Sequence[str] | None = None) -> int:
    """Print the client's and the server's figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile_frames")
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement (3)")
    args = parser.parse_args(argv)
    size, cpu, grown = client_cost()
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(
        f"client: one {size}-byte packed frame, not agreed: {cpu * 1000:.1f} ms CPU, "
        f"{grown:.1f} MiB allocated at the peak"
    )
    # One worker process: the bystander and the hostile client share it, as on any server
    # whose sessions outnumber its workers.
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "1"]
    serve += ["--max-message-size", str(SERVER_LIMIT)]
    with LocalServerProcess(serve) as server:
        assert server.base_url is not None
        alone = statistics.median(bystander_steps(server.base_url, args.seconds))
        stop, sent = threading.Event(), [0]
        hostile = threading.Thread(target=flood, args=(server.base_url, stop, sent))
        hostile.start()
        try:
            beside = bystander_steps(server.base_url, args.seconds)
        finally:
            stop.set()
            hostile.join(60)
    print(
        f"server: bystander median step {alone * 1000:.2f} ms alone, "
        f"{statistics.median(beside) * 1000:.2f} ms beside {sent[0]} hostile frames "
        f"({sent[0] / args.seconds:.0f}/s, {len(packed_zeros(SERVER_LIMIT - 1024))} bytes each)"
    )
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
