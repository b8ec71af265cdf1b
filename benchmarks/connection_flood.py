"""``python -m benchmarks.connection_flood``: a server under a flood of connections that never
send a whole request (idle TCP, half a header), with a token required.

Starts ``openenv-gym serve gymnasium --env-id CartPole-v1 --token ...`` in a child process
(optionally with a lowered ``RLIMIT_NOFILE``), opens ``--connections`` raw connections in
waves, each sending nothing or half a request head, and holds them. Throughout, it asks
``GET /health`` after every wave and samples the server's RSS (``/proc/PID/status``) and open
descriptors. Prints one Markdown table (wave, connections held open by the client, the ones
the server already dropped, health answered, server RSS, server descriptors) and whether a
session could be played at the end.

Not a test: RSS depends on the allocator and the machine; the client needs
``--connections`` descriptors of its own (``ulimit -n``).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import time

import httpx

from benchmarks.memory_bounds import rss_mib
from openenv_gym import OpenEnvEnv
from openenv_gym.providers.ready_line import read_ready_line

TOKEN = "flood-benchmark-token"
HALF_HEAD = b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _start(nofile: int | None) -> tuple[subprocess.Popen[str], str, int]:
    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openenv_gym.cli",
            "serve",
            "gymnasium",
            "--env-id",
            "CartPole-v1",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--token",
            TOKEN,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=limit,
    )
    assert process.stdout is not None
    info = read_ready_line(process.stdout)
    return process, str(info["url"]), int(info["port"])


def _dropped(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` (non-blocking: a peek on a socket with a timeout waits for
    it) the server closed (EOF or reset)."""
    count = 0
    for sock in sockets:
        try:
            if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                count += 1
        except BlockingIOError:
            pass
        except OSError:
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=4000)
    parser.add_argument("--waves", type=int, default=8)
    parser.add_argument("--nofile", type=int, default=None, help="the server's RLIMIT_NOFILE")
    parser.add_argument("--hold", type=float, default=11.0, help="seconds to hold them after")
    args = parser.parse_args(argv)
    process, url, port = _start(args.nofile)
    held: list[socket.socket] = []
    rows = []
    try:
        rows.append(("start", 0, 0, "yes", rss_mib(process.pid), _descriptors(process.pid)))
        per_wave = max(1, args.connections // args.waves)
        for wave in range(1, args.waves + 1):
            for k in range(per_wave):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                if k % 2:
                    sock.sendall(HALF_HEAD)
                sock.setblocking(False)  # a peek must not wait (see _dropped)
                held.append(sock)
            started = time.perf_counter()
            try:
                status = httpx.get(url + "/health", timeout=10).status_code
                answer = f"{status} in {(time.perf_counter() - started) * 1e3:.1f} ms"
            except httpx.HTTPError as exc:
                answer = f"no ({type(exc).__name__})"
            rows.append(
                (
                    str(wave),
                    len(held),
                    _dropped(held),
                    answer,
                    rss_mib(process.pid),
                    _descriptors(process.pid),
                )
            )
        time.sleep(args.hold)  # past the handshake deadline: the server dropped them all
        rows.append(
            (
                f"+{args.hold:g} s",
                len(held),
                _dropped(held),
                "-",
                rss_mib(process.pid),
                _descriptors(process.pid),
            )
        )
        for sock in held:
            sock.close()
        held.clear()
        with OpenEnvEnv(url, token=TOKEN) as env:
            env.reset(seed=0)
            env.step(env.action_space.sample())
        played = "yes"
    except Exception as exc:
        played = f"no ({type(exc).__name__}: {exc})"
    finally:
        for sock in held:
            sock.close()
        process.terminate()
        process.wait(30)
    print(
        "| wave | held by the client | dropped by the server | /health | server RSS (MiB) "
        "| server fds |"
    )
    print("|---|---:|---:|---|---:|---:|")
    for wave_name, count, dropped, answer, rss, fds in rows:
        print(f"| {wave_name} | {count} | {dropped} | {answer} | {rss:.1f} | {fds} |")
    print(f"\nA session played after the flood: {played}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
