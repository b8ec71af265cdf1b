"""Our client against official ``openenv`` servers with every schema shape of the catalog.

Each server is the official package's FastAPI app under uvicorn (see tests/official_shapes.py);
``gym.make("openenv/Remote-v0", base_url=url)`` must work with nothing else passed, except
where the server leaves the action range undeclared: then one named keyword pins it.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import gymnasium
import gymnasium as gym
import numpy
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.cli import main
from openenv_gym.errors import (
    ActionMaskUnavailableError,
    EnvNotPicklableError,
    ObservationMismatchError,
    SpaceMappingError,
)
from tests.official_shapes import COLUMNS, SHOUT_SUFFIX, serve_shape


@pytest.fixture(scope="module")
def columns_url() -> Iterator[str]:
    with serve_shape("columns") as url:
        yield url


@pytest.fixture(scope="module")
def declared_columns_url() -> Iterator[str]:
    with serve_shape("declared_columns") as url:
        yield url


#: The pin an undeclared integer action range needs (what the refusal asks for).
COLUMNS_PIN: dict[str, Any] = {"action_field_spaces": {"column": spaces.Discrete(COLUMNS)}}


@pytest.fixture(scope="module")
def control_url() -> Iterator[str]:
    with serve_shape("control") as url:
        yield url


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    with serve_shape("chat") as url:
        yield url


@pytest.fixture(scope="module")
def grid_url() -> Iterator[str]:
    with serve_shape("grid") as url:
        yield url


@pytest.fixture(scope="module")
def unmappable_url() -> Iterator[str]:
    with serve_shape("unmappable") as url:
        yield url


def _make(url: str, **kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("openenv/Remote-v0", base_url=url, **kwargs)


# --------------------------------------------------------------------------- each shape


def test_unbounded_int_action_takes_the_range_the_server_declares(
    declared_columns_url: str,
) -> None:
    env = _make(declared_columns_url)
    try:
        unwrapped = env.unwrapped
        assert env.action_space == spaces.Discrete(COLUMNS)
        assert unwrapped.inferred_spaces[0].source == "the server's declared number of actions"
        board = env.observation_space["board"]
        assert board.shape == (2, COLUMNS)
        assert board.dtype == np.int64
        assert env.observation_space["phase"] == spaces.Discrete(2)
        assert [i.path for i in unwrapped.inferred_spaces] == ["column", "board"]
        _, info = env.reset(seed=0)
        assert info["legal_actions"] == [0, 1, 2, 3]
        np.testing.assert_array_equal(unwrapped.action_masks(), [True] * COLUMNS)
        env.step(0)
        env.step(0)  # column 0 is full now: the legal actions shrink
        _, _, terminated, truncated, info = env.step(1)
        assert info["legal_actions"] == [1, 2, 3]
        np.testing.assert_array_equal(unwrapped.action_masks(), [False, True, True, True])
        assert not terminated
        assert not truncated
    finally:
        env.close()


def test_an_undeclared_int_action_range_is_refused_showing_what_was_observed(
    columns_url: str,
) -> None:
    with pytest.raises(SpaceMappingError) as info:
        _make(columns_url)
    message = str(info.value)
    assert "observed, not declared: legal actions 0..3 at one reset" in message
    # The values seen make the call complete, labelled observed (issue 31, item 6).
    fix = f"action_field_spaces={{'column': gymnasium.spaces.Discrete({COLUMNS})}}"
    assert f"Fix (observed, not declared): {fix}" in message
    label, call = message.splitlines()[-1].split(": ", 1)
    assert label == "Paste (observed at one reset, not declared; the game may allow more)"
    env = eval(call, {"gym": gym, "gymnasium": gymnasium, "numpy": numpy})
    try:
        assert env.action_space == spaces.Discrete(COLUMNS)
        assert [i.path for i in env.unwrapped.inferred_spaces] == ["board"]
        env.reset(seed=0)
        env.step(3)
    finally:
        env.close()


def test_masked_random_play_ends_every_game(columns_url: str) -> None:
    env = _make(columns_url, **COLUMNS_PIN)
    rng = np.random.default_rng(0)
    try:
        for episode in range(3):
            env.reset(seed=episode)
            terminated, steps = False, 0
            while not terminated:
                mask = env.unwrapped.action_masks()
                action = rng.choice(np.flatnonzero(mask))
                _, _, terminated, _, _ = env.step(action)
                steps += 1
            assert steps == COLUMNS * 2
    finally:
        env.close()


def test_dict_of_named_arrays_and_an_action_of_unstated_length(control_url: str) -> None:
    env = _make(control_url)
    try:
        observations = env.observation_space["observations"]
        assert list(observations.spaces) == ["position", "velocity"]
        assert observations["position"].shape == (3,)
        assert observations["velocity"].shape == (2,)
        # From the state's action_spec: shape and bounds.
        assert env.action_space == spaces.Box(-1.0, 1.0, (2,), np.float32)
        obs, _ = env.reset(seed=0)
        obs, reward, *_ = env.step(np.array([1.0, -1.0], np.float32))
        np.testing.assert_allclose(obs["observations"]["velocity"], [0.1, -0.1], rtol=1e-6)
        assert reward == pytest.approx(-0.1)
        pins = env.unwrapped.pinning_kwargs()
        assert "observation_field_shapes={'observations.position': (3,)" in pins
        assert "action_field_spaces={'values': gymnasium.spaces.Box(-1.0, 1.0, (2,)" in pins
    finally:
        env.close()


def test_a_later_observation_that_disagrees_names_the_keyword_to_pin_or_exclude(
    control_url: str,
) -> None:
    env = _make(control_url)
    try:
        with pytest.raises(ObservationMismatchError) as info:
            env.reset(options={"grow": True})
        message = str(info.value)
        assert info.value.field == "observations.position"
        assert "the reset observation" in message
        assert "observation_field_shapes={'observations.position'" in message
        assert "observation_exclude" not in message  # the only field: nothing would be left
    finally:
        env.close()


def test_pinned_shapes_are_used_and_nothing_is_probed(control_url: str) -> None:
    env = _make(
        control_url,
        observation_field_shapes={"observations.position": (3,), "observations.velocity": (2,)},
        action_field_shapes={"values": (2,)},
    )
    try:
        assert env.unwrapped.inferred_spaces == ()
        # No action_spec used: a pinned shape without bounds.
        assert env.action_space == spaces.Box(-np.inf, np.inf, (2,), np.float32)
        assert env.observation_space["observations"]["position"].shape == (3,)
    finally:
        env.close()


def test_free_text_and_variable_length_lists_go_to_info(chat_url: str) -> None:
    env = _make(chat_url)
    try:
        assert isinstance(env.action_space, spaces.Text)
        assert isinstance(env.observation_space["prompt"], spaces.Text)
        assert env.observation_space["speaker"] == spaces.Discrete(2)
        assert "history" not in env.observation_space.spaces
        env.reset(seed=0)
        obs, reward, _, _, info = env.step("hello")
        assert obs["prompt"] == "hello"
        assert obs["speaker"] == 1
        assert info["history"] == ["hello"]
        assert reward == 1.0
        with pytest.raises(ActionMaskUnavailableError, match="legal"):
            env.unwrapped.action_masks()
    finally:
        env.close()


def test_enum_action_with_valid_actions_gives_a_mask(grid_url: str) -> None:
    env = _make(grid_url)
    try:
        assert env.action_space == spaces.Discrete(4)  # up, down, left, right
        env.reset(seed=0)
        np.testing.assert_array_equal(env.unwrapped.action_masks(), [True, False, False, True])
        obs, *_ = env.step(3)  # right
        np.testing.assert_array_equal(obs["position"], [1, 0])
        np.testing.assert_array_equal(env.unwrapped.action_masks(), [True, False, True, True])
    finally:
        env.close()


@pytest.mark.parametrize("name", ["declared_columns", "control", "chat", "grid"])
def test_gymnasium_check_env_passes_with_its_defaults(name: str) -> None:
    with serve_shape(name) as url:
        env = _make(url)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()


# --------------------------------------------------------------------------- errors


def test_one_error_lists_every_unmappable_field_with_a_call_that_works(
    unmappable_url: str,
) -> None:
    with pytest.raises(SpaceMappingError) as info:
        _make(unmappable_url)
    err = info.value
    assert [(p.role, p.path) for p in err.problems] == [
        ("action", "choice"),
        ("observation", "anything"),
    ]
    message = str(err)
    assert "action_field_spaces={'choice': gymnasium.spaces.Discrete(n)}" in message
    assert "observation_exclude=['anything']" in message
    for wrong in ("field_spaces=", "field_shapes=", "exclude=", "include="):
        # Only keyword arguments that exist: every suggestion is prefixed by its role.
        for line in message.splitlines():
            for at in range(len(line)):
                if line.startswith(wrong, at):
                    assert line[at - 1] == "_", line
    call = message.splitlines()[-1].removeprefix("Paste and edit: ")
    call = call.replace("Discrete(n)", "Discrete(3)")
    env = eval(call, {"gym": gym, "gymnasium": gymnasium, "numpy": numpy})
    try:
        assert env.action_space == spaces.Discrete(3)
        assert list(env.observation_space.spaces) == ["score"]
        env.reset(seed=0)
        _, reward, _, _, info = env.step(2)
        assert reward == 1.0
        assert info["anything"] == [2]
    finally:
        env.close()


def test_misspelt_options_are_named_as_the_env_spells_them(columns_url: str) -> None:
    with pytest.raises(SpaceMappingError) as info:
        _make(columns_url, observation_exclude=["bord"])
    assert "observation_exclude names 'bord'" in str(info.value)


def test_pickling_an_env_says_to_pass_a_creator(columns_url: str) -> None:
    env = _make(columns_url, **COLUMNS_PIN)
    try:
        with pytest.raises(EnvNotPicklableError) as info:
            pickle.dumps(env)
        message = str(info.value)
        assert "creator" in message
        assert f"gym.make('openenv/Remote-v0', base_url={columns_url!r}" in message
    finally:
        env.close()


# --------------------------------------------------------------------------- check


def test_check_prints_what_it_inferred_and_the_call_that_works(
    control_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", control_url, "--max-steps", "5"]) == 0
    report = capsys.readouterr().out
    assert "taken from the data: observation 'observations.position': (3,)" in report
    works = next(line for line in report.splitlines() if line.startswith("works: "))
    assert works.startswith("works: gym.make('openenv/Remote-v0'")
    env = eval(works.removeprefix("works: "), {"gym": gym, "gymnasium": gymnasium, "numpy": numpy})
    try:
        assert env.unwrapped.inferred_spaces == ()  # everything pinned
        assert env.action_space == spaces.Box(-1.0, 1.0, (2,), np.float32)
    finally:
        env.close()


def test_check_takes_the_mapping_options_and_reports_json(
    unmappable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", unmappable_url, "--max-steps", "3"]) == 1
    failed = capsys.readouterr().out
    assert "[FAIL] spaces" in failed
    assert "action_field_spaces={'choice'" in failed  # the whole message, not its first line
    argv = [
        "check",
        unmappable_url,
        "--max-steps",
        "3",
        "--json",
        "--observation-exclude",
        "anything",
        "--action-field-space",
        'choice={"type": "Discrete", "n": 3}',
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert [c["name"] for c in report["checks"]][-1] == "check_env"
    assert report["make_call"] == (
        f"gym.make('openenv/Remote-v0', base_url={unmappable_url!r}, "
        "observation_exclude=['anything'], "
        "action_field_spaces={'choice': gymnasium.spaces.Discrete(3)})"
    )


def test_check_rejects_a_malformed_option(
    unmappable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", unmappable_url, "--action-field-space", "choice=notjson"]) == 2
    assert "FIELD=JSON" in capsys.readouterr().err


def test_a_second_make_of_a_one_session_server_needs_no_probe() -> None:
    # The control shape needs a probe (open shapes); its server here takes one session.
    with serve_shape("control", max_concurrent_envs=1) as url:
        first = _make(url)
        try:
            first.reset(seed=0)
            # A second make while the first holds the only session: no second probe.
            second = _make(url)
            try:
                assert second.observation_space == first.observation_space
                assert second.action_space == first.action_space
            finally:
                second.close()
        finally:
            first.close()
        # Gymnasium's check_env makes a second env from the spec while the first is open.
        env = _make(url)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()
        # Other options are another mapping: the probe runs again (the session is free now).
        pinned = _make(url, observation_field_shapes={"observations.position": (3,)})
        try:
            assert pinned.observation_space["observations"]["position"].shape == (3,)
        finally:
            pinned.close()


@pytest.fixture(scope="module")
def shout_url() -> Iterator[str]:
    with serve_shape("shout") as url:
        yield url


def test_free_text_observations_take_any_character_the_server_sends(shout_url: str) -> None:
    env = _make(shout_url)
    try:
        env.reset(seed=0)
        obs, *_ = env.step("école")
        assert obs["prompt"] == "ÉCOLE" + SHOUT_SUFFIX
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_async_make_vec_returns_the_text_the_servers_sent(shout_url: str) -> None:
    vec = gym.make_vec(
        "openenv/Remote-v0", num_envs=2, vectorization_mode="async", base_url=shout_url
    )
    try:
        obs, _ = vec.reset(seed=0)
        assert tuple(obs["prompt"]) == ("say something", "say something")
        obs, *_ = vec.step(("a", "b"))
        assert tuple(obs["prompt"]) == ("A" + SHOUT_SUFFIX, "B" + SHOUT_SUFFIX)
        obs, *_ = vec.step(("c", ""))
        assert tuple(obs["prompt"]) == ("C" + SHOUT_SUFFIX, SHOUT_SUFFIX)
    finally:
        vec.close()


def test_check_reports_a_server_that_ignores_seeds_as_its_own_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve_shape("unseeded") as url:
        assert main(["check", url]) == 0
        report = capsys.readouterr().out
        assert "[ok]   check_env  passed up to Gymnasium's determinism check" in report
        assert "[server] seeding    the server ignores reset(seed=)" in report
        assert report.splitlines()[-1] == "result: PASS (6 checks; server findings: seeding)"
        assert main(["check", url, "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
        assert body["passed"] is True
        assert [f["name"] for f in body["server_findings"]] == ["seeding"]
    # A seeded server has no finding.
    with serve_shape("chat") as url:
        assert main(["check", url]) == 0
        assert "[server]" not in capsys.readouterr().out


def test_the_call_the_disagreement_suggests_works(control_url: str) -> None:
    env = _make(control_url)
    try:
        with pytest.raises(ObservationMismatchError) as info:
            env.reset(options={"grow": True})
    finally:
        env.close()
    message = str(info.value)
    # 'observations' is the only field: excluding it would leave no space, so not offered.
    assert "observation_exclude" not in message
    # The dotted pins of the whole dict, position at the shape the grown observation has.
    suggested = (
        "observation_field_shapes={'observations.position': (4,), 'observations.velocity': (2,)}"
    )
    assert message.endswith(suggested)
    pinned = _make(control_url, **eval(f"dict({suggested})"))
    try:
        obs, _ = pinned.reset(options={"grow": True})
        assert obs["observations"]["position"].shape == (4,)
        assert obs["observations"]["velocity"].shape == (2,)
        assert pinned.observation_space.contains(obs)
    finally:
        pinned.close()
