"""``python -m benchmarks.codecs``: which codec pays for observation arrays, and on which link.

For real observations (ALE Pong and MsPacman RGB screens, grayscale screens and RAM; CartPole
observations; MuJoCo-like float32 random-walk vectors; and batch frames of several of them, as
a batch connection carries N sub-envs' observations in one frame) it measures, per codec, the
compression ratio and the encode and decode time of one array (single thread, median over the
samples), then says where compression pays: it pays on a link when the transfer time it saves,
``(raw - compressed) / bandwidth``, exceeds ``encode + decode``. The column "pays below" is
that break-even bandwidth: on any slower link the codec wins.

Candidates: ``zstandard`` (levels 1 and 3), ``lz4`` (frame and block), ``blosc2`` (LZ4 and
ZSTD with byte shuffle, typesize = the dtype's itemsize) and ``cramjam`` (lz4 block, snappy
raw, zstd 1). A missing package is reported and skipped: ``pip install zstandard lz4 blosc2
cramjam``; the Atari data needs ``pip install 'openenv-gym[atari]'``.

Example (a tiny run on synthetic data only)::

    python -m benchmarks.codecs --quick
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Links the table prices (name -> bytes/s per direction), as in openenv_gym.bench.links.
LINKS = {"lan": 1000e6 / 8, "wan": 100e6 / 8}


@dataclass(frozen=True)
class Codec:
    """One candidate: ``encode(data, itemsize) -> bytes`` and ``decode(blob, size) -> bytes``."""

    name: str
    package: str
    encode: Callable[[bytes, int], bytes]
    decode: Callable[[bytes, int], bytes]


def codecs() -> list[Codec]:
    """Every candidate whose package is installed (imports happen here)."""
    found: list[Codec] = []
    if importlib.util.find_spec("zstandard"):
        import zstandard

        for level in (1, 3):
            compressor = zstandard.ZstdCompressor(level=level)
            decompressor = zstandard.ZstdDecompressor()
            found.append(
                Codec(
                    f"zstd-{level}",
                    "zstandard",
                    lambda data, _, c=compressor: c.compress(data),
                    lambda blob, size, d=decompressor: d.decompress(blob, max_output_size=size),
                )
            )
    if importlib.util.find_spec("lz4"):
        import lz4.block
        import lz4.frame

        found.append(
            Codec(
                "lz4-frame",
                "lz4",
                lambda data, _: lz4.frame.compress(data),
                lambda blob, size: lz4.frame.decompress(blob),
            )
        )
        found.append(
            Codec(
                "lz4-block",
                "lz4",
                lambda data, _: lz4.block.compress(data, store_size=False),
                lambda blob, size: lz4.block.decompress(blob, uncompressed_size=size),
            )
        )
    if importlib.util.find_spec("blosc2"):
        import blosc2

        blosc2.set_nthreads(1)
        for codec_name, codec, level in (
            ("lz4", blosc2.Codec.LZ4, 5),
            ("zstd", blosc2.Codec.ZSTD, 1),
        ):
            found.append(
                Codec(
                    f"blosc2-{codec_name}-shuffle",
                    "blosc2",
                    lambda data, itemsize, c=codec, lv=level: blosc2.compress(
                        data, typesize=itemsize, clevel=lv, filter=blosc2.Filter.SHUFFLE, codec=c
                    ),
                    lambda blob, size: blosc2.decompress(blob),
                )
            )
    if importlib.util.find_spec("cramjam"):
        import cramjam

        found += [
            Codec(
                "cramjam-lz4-block",
                "cramjam",
                lambda data, _: bytes(cramjam.lz4.compress_block(data, store_size=False)),
                lambda blob, size: bytes(cramjam.lz4.decompress_block(blob, output_len=size)),
            ),
            Codec(
                "cramjam-snappy",
                "cramjam",
                lambda data, _: bytes(cramjam.snappy.compress_raw(data)),
                lambda blob, size: bytes(cramjam.snappy.decompress_raw(blob)),
            ),
            Codec(
                "cramjam-zstd-1",
                "cramjam",
                lambda data, _: bytes(cramjam.zstd.compress(data, level=1)),
                lambda blob, size: bytes(cramjam.zstd.decompress(blob)),
            ),
        ]
    return found


# --------------------------------------------------------------------------- data


def atari_frames(game: str, obs_type: str, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` observations of an ALE game under random actions, spread over an episode."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    env = gym.make(f"ALE/{game}-v5", obs_type=obs_type, frameskip=4, repeat_action_probability=0.0)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    frames = []
    steps = 0
    while len(frames) < count:
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        steps += 1
        if steps % 7 == 0:
            frames.append(np.ascontiguousarray(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return frames


def cartpole_obs(count: int, seed: int = 0) -> list[np.ndarray]:
    """CartPole-v1 observations (float32, 4 values) under random actions."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    while len(out) < count:
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
        out.append(np.asarray(obs, dtype=np.float32))
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return out


def random_walk(count: int, dims: int, seed: int = 0) -> list[np.ndarray]:
    """MuJoCo-like float32 vectors: each dimension a random walk with its own scale."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.01, 1.0, dims)
    walk = np.cumsum(rng.normal(0.0, 1.0, (count * 4, dims)) * scale, axis=0)
    return [walk[i * 4].astype(np.float32) for i in range(count)]


def batches(arrays: Sequence[np.ndarray], size: int) -> list[np.ndarray]:
    """Stack ``size`` consecutive arrays into one (what a batch frame carries for N sub-envs)."""
    return [np.stack(arrays[i : i + size]) for i in range(0, len(arrays) - size + 1, size)]


def datasets(samples: int, quick: bool) -> tuple[dict[str, list[np.ndarray]], list[str]]:
    """The named data sets, and notes on the ones that could not be built."""
    data: dict[str, list[np.ndarray]] = {}
    notes: list[str] = []
    if not quick and importlib.util.find_spec("ale_py"):
        pong = atari_frames("Pong", "rgb", samples * 4)
        data["Pong RGB 210x160x3"] = pong[:samples]
        data["Pong RGB x16 (batch)"] = batches(pong, 16)[: max(2, samples // 8)]
        data["MsPacman RGB 210x160x3"] = atari_frames("MsPacman", "rgb", samples)
        data["Pong grayscale 210x160"] = atari_frames("Pong", "grayscale", samples)
        data["MsPacman grayscale 210x160"] = atari_frames("MsPacman", "grayscale", samples)
        data["Pong RAM 128"] = atari_frames("Pong", "ram", samples)
        data["MsPacman RAM 128"] = atari_frames("MsPacman", "ram", samples)
    elif not quick:
        notes.append("Atari data skipped: ale_py is missing (pip install 'openenv-gym[atari]')")
    cart = cartpole_obs(samples * 64)
    data["CartPole 4 x float32"] = cart[:samples]
    data["CartPole x64 (batch)"] = batches(cart, 64)[:samples]
    walks = random_walk(samples * 16, 376)
    data["random walk 376 x float32"] = walks[:samples]
    data["random walk 376 x16 (batch)"] = batches(walks, 16)[:samples]
    return data, notes


# --------------------------------------------------------------------------- timing


def _time_per_call(call: Callable[[], object], floor: float = 0.002) -> float:
    """Seconds per call: the best of 3 loops, each at least ``floor`` seconds long."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            call()
        if time.perf_counter() - start >= floor:
            break
        loops *= 4
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(loops):
            call()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


@dataclass
class Row:
    data: str
    codec: str
    raw: int
    ratio: float
    encode_us: float
    decode_us: float

    @property
    def saved(self) -> float:
        return self.raw - self.raw / self.ratio

    def net_us(self, bytes_per_s: float) -> float:
        """Microseconds one array gains on a link (transfer saved minus encode + decode)."""
        return self.saved / bytes_per_s * 1e6 - (self.encode_us + self.decode_us)

    def break_even_mbit(self) -> float:
        """The bandwidth (Mbit/s) below which compression pays (0: it never does)."""
        cost = (self.encode_us + self.decode_us) / 1e6
        return max(0.0, self.saved / cost * 8 / 1e6) if cost > 0 else float("inf")


def measure(name: str, arrays: Sequence[np.ndarray], codec: Codec) -> Row:
    ratios, encodes, decodes = [], [], []
    for array in arrays:
        data = array.tobytes()
        itemsize = array.dtype.itemsize
        blob = codec.encode(data, itemsize)
        if codec.decode(blob, len(data)) != data:
            raise RuntimeError(f"{codec.name} did not round-trip {name}")
        ratios.append(len(data) / len(blob))
        size = len(data)
        encodes.append(_time_per_call(lambda d=data, i=itemsize: codec.encode(d, i)))
        decodes.append(_time_per_call(lambda b=blob, n=size: codec.decode(b, n)))
    return Row(
        name,
        codec.name,
        arrays[0].nbytes,
        statistics.median(ratios),
        statistics.median(encodes) * 1e6,
        statistics.median(decodes) * 1e6,
    )


def format_rows(rows: Sequence[Row]) -> str:
    """The Markdown table."""
    lines = [
        "| data | raw bytes | codec | ratio | encode µs | decode µs | net µs/array on lan "
        "| net µs/array on wan | pays below (Mbit/s) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.data} | {row.raw:,} | {row.codec} | {row.ratio:,.1f} | "
            f"{row.encode_us:,.1f} | {row.decode_us:,.1f} | {row.net_us(LINKS['lan']):+,.0f} | "
            f"{row.net_us(LINKS['wan']):+,.0f} | {row.break_even_mbit():,.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.codecs", description=__doc__)
    parser.add_argument("--samples", type=int, default=16, help="arrays per data set (16)")
    parser.add_argument(
        "--quick", action="store_true", help="synthetic and CartPole data only, 4 samples"
    )
    args = parser.parse_args(argv)
    samples = 4 if args.quick else max(2, args.samples)
    candidates = codecs()
    missing = {"zstandard", "lz4", "blosc2", "cramjam"} - {c.package for c in candidates}
    data, notes = datasets(samples, args.quick)
    rows = []
    for name, arrays in data.items():
        for codec in candidates:
            rows.append(measure(name, arrays, codec))
            print(f"{name}: {codec.name} done", file=sys.stderr, flush=True)
    print(format_rows(rows))
    print(
        "\nratio: raw / compressed (median over the samples); encode / decode: one array, one "
        "thread, best of 3 loops, median over the samples; net: transfer time saved at the "
        "link's bandwidth (lan 1 Gbit/s, wan 100 Mbit/s) minus encode + decode, per array "
        "(positive: compression pays); pays below: the bandwidth under which it pays"
    )
    for package in sorted(missing):
        print(f"note: {package} is not installed: its codecs were skipped (pip install {package})")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
