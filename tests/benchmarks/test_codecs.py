"""``python -m benchmarks.codecs``: every installed codec round-trips real data, and the
break-even arithmetic says what the docs say it does."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import codecs


def test_every_codec_round_trips_and_the_quick_table_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert codecs.main(["--quick"]) == 0
    out = capsys.readouterr().out
    names = [codec.name for codec in codecs.codecs()]
    assert names, "no codec package is installed"
    for name in names:
        assert f"| CartPole x64 (batch) | 1,024 | {name} |" in out
    assert "| pays below (Mbit/s) |" in out


@pytest.mark.parametrize("codec", codecs.codecs(), ids=lambda codec: codec.name)
def test_a_screen_like_array_shrinks_and_comes_back(codec: codecs.Codec) -> None:
    screen = np.zeros((210, 160, 3), dtype=np.uint8)
    screen[100:110, 20:24] = 236  # a paddle on a flat background
    row = codecs.measure("screen", [screen], codec)
    assert row.ratio > 5
    assert row.raw == screen.nbytes


def test_break_even_is_saved_bytes_over_codec_time() -> None:
    row = codecs.Row("x", "c", raw=100_000, ratio=10.0, encode_us=60.0, decode_us=30.0)
    # 90,000 bytes saved in 90 µs: it pays below 1e9 bytes/s = 8,000 Mbit/s.
    assert row.break_even_mbit() == pytest.approx(8000.0)
    assert row.net_us(1e9) == pytest.approx(0.0, abs=1e-9)
    assert row.net_us(12.5e6) == pytest.approx(90_000 / 12.5e6 * 1e6 - 90)
    assert codecs.Row("x", "c", 100, 0.5, 1.0, 1.0).break_even_mbit() == 0.0
