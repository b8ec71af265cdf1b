"""The shared argparse converters: accepted values, and one clear message for each refusal."""

from __future__ import annotations

import argparse
import re

import pytest

from openenv_gym.argument_types import (
    float_argument,
    int_argument,
    port_number,
    positive_int,
    positive_seconds,
    probability,
)


@pytest.mark.parametrize(
    ("convert", "text", "expected"),
    [
        (positive_int, "3", 3),
        (port_number, "0", 0),
        (port_number, "65535", 65535),
        (positive_seconds, "0.25", 0.25),
        (probability, "0", 0.0),
        (probability, "1", 1.0),
    ],
)
def test_accepted_values(convert: object, text: str, expected: float) -> None:
    assert convert(text) == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("convert", "text", "message"),
    [
        (positive_int, "x", "expected a positive integer, got 'x'"),
        (positive_int, "0", "expected a positive integer, got '0'"),
        (port_number, "65536", "expected a port in 0..65535, got '65536'"),
        (port_number, "-1", "expected a port in 0..65535, got '-1'"),
        (positive_seconds, "0", "expected a positive number of seconds, got '0'"),
        (positive_seconds, "nan", "expected a positive number of seconds, got 'nan'"),
        (probability, "1.5", "expected a probability in [0, 1], got '1.5'"),
        (probability, "nan", "expected a probability in [0, 1], got 'nan'"),
        (probability, "often", "expected a probability, got 'often'"),
    ],
)
def test_refusals_say_what_was_expected(convert: object, text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        convert(text)  # type: ignore[operator]
    assert str(caught.value) == message


def test_custom_bounds() -> None:
    frames = int_argument("a number of frames", minimum=1, maximum=10, bound="1..10 frames")
    assert frames("10") == 10
    with pytest.raises(
        argparse.ArgumentTypeError, match=re.escape("expected 1..10 frames, got '11'")
    ):
        frames("11")
    scale = float_argument("a scale", minimum=-1.0, maximum=1.0, bound="a scale in [-1, 1]")
    assert scale("-1") == -1.0
    with pytest.raises(argparse.ArgumentTypeError, match="expected a scale, got ''"):
        scale("")
