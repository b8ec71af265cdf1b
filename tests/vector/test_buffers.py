"""The batch buffers of a vector env (:class:`~openenv_gym.vector.buffers.BatchBuffers`) on
their own: real replies of a CartPole server on 127.0.0.1 land in the buffers as a
Gymnasium CartPole stepped by hand says they should."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_gym.client.options import ConnectOptions
from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import ActionMaskUnavailableError, OpenEnvGymError
from openenv_gym.vector.buffers import BatchBuffers
from openenv_gym.vector.connections import Connections
from openenv_gym.vector.options import make_template
from openenv_gym.vector.round_trip import Op
from openenv_gym.wire.batch import BatchResult
from openenv_gym.wire.encoding import resolve_encoding

pytestmark = pytest.mark.timeout(120)

NUM_ENVS = 3
SEED = 11


@pytest.fixture(scope="module")
def add_info() -> Iterator[Any]:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    yield envs._add_info
    envs.close()


@pytest.fixture
def fleet(cartpole_url: str) -> Iterator[tuple[Connections, OpenEnvEnv]]:
    """``NUM_ENVS`` sessions on the CartPole server (one batch connection), and their env."""
    connections = Connections(
        NUM_ENVS, encoding=resolve_encoding("auto"), connect_options=ConnectOptions()
    )
    template = make_template(None, [cartpole_url], {"reply_timeout": 30.0}, "auto")
    connections.adopt(template, [cartpole_url], borrow_arrays=False)
    connections.open(range(NUM_ENVS), check_capacity=True)
    try:
        yield connections, template
    finally:
        connections.close()


def _buffers(
    template: OpenEnvEnv,
    add_info: Any,
    mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    max_episode_steps: int | None = None,
) -> BatchBuffers:
    return BatchBuffers(
        template.observation_codec,
        NUM_ENVS,
        autoreset_mode=mode,
        max_episode_steps=max_episode_steps,
        add_info=add_info,
        where=lambda index: f"http://server-of-{index}",
    )


def _round_trip(connections: Connections, ops: list[Op | None]) -> list[tuple[Any, BatchResult]]:
    results, broken = connections.collect(connections.send(ops))
    assert broken == []
    return [(channel.indices, result) for channel, result in results]


def _reset(connections: Connections, buffers: BatchBuffers) -> None:
    ops: list[Op | None] = [("reset", {"seed": SEED + i}) for i in range(NUM_ENVS)]
    for indices, result in _round_trip(connections, ops):
        buffers.take_resets(indices, result, {})
    buffers.finish()
    buffers.mark_reset(range(NUM_ENVS))


def _step(
    connections: Connections,
    template: OpenEnvEnv,
    buffers: BatchBuffers,
    actions: np.ndarray,
    resetting: frozenset[int] | None = None,
) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    wires = template.action_codec.encode_batch(actions, NUM_ENVS)
    ops: list[Op | None] = [("step", wire) for wire in wires]
    for i in resetting or ():
        ops[i] = ("reset", {})
    infos: dict[str, Any] = {}
    ended: dict[int, dict[str, Any]] = {}
    for indices, result in _round_trip(connections, ops):
        infos = buffers.take_steps(indices, result, resetting, infos, ended)
    buffers.finish()
    buffers.end_step()
    return infos, ended


def _references() -> list[gym.Env[Any, Any]]:
    envs = [gym.make("CartPole-v1") for _ in range(NUM_ENVS)]
    for i, env in enumerate(envs):
        env.reset(seed=SEED + i)
    return envs


def test_resets_are_written_in_place_and_copied_on_request(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    connections, template = fleet
    buffers = _buffers(template, add_info)
    assert buffers.stacked  # CartPole's Box batches into one array
    before = buffers.observations
    _reset(connections, buffers)
    assert buffers.observations is before
    expected = np.stack([gym.make("CartPole-v1").reset(seed=SEED + i)[0] for i in range(3)])
    np.testing.assert_allclose(buffers.observations, expected, rtol=1e-6)
    assert buffers.batch_observations(copy=False) is before
    copied = buffers.batch_observations(copy=True)
    assert copied is not before
    np.testing.assert_array_equal(copied, before)
    row = buffers.observation_of(1)
    row[:] = 0
    np.testing.assert_allclose(buffers.observations[1], expected[1], rtol=1e-6)


def test_steps_match_gymnasium_and_ended_episodes_reset_on_the_next_step(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    connections, template = fleet
    buffers = _buffers(template, add_info)
    _reset(connections, buffers)
    references = _references()
    actions = np.ones(NUM_ENVS, dtype=np.int64)  # always push right: episodes end soon
    for _ in range(200):
        _step(connections, template, buffers, actions)
        outcomes = [env.step(1) for env in references]
        np.testing.assert_allclose(
            buffers.observations, np.stack([o[0] for o in outcomes]), rtol=1e-5
        )
        assert buffers.rewards.tolist() == [o[1] for o in outcomes]
        assert buffers.terminations.tolist() == [o[2] for o in outcomes]
        assert buffers.truncations.tolist() == [False] * NUM_ENVS
        if buffers.terminations.any():
            break
    else:
        pytest.fail("no CartPole episode ended in 200 steps of pushing right")
    ended = np.flatnonzero(buffers.terminations).tolist()
    assert buffers.pending_resets == ended
    assert buffers.autoreset.tolist() == buffers.terminations.tolist()
    # NEXT_STEP: the ended sub-envs are reset by the next step: reward 0, neither flag.
    _step(connections, template, buffers, actions, resetting=frozenset(ended))
    for i in ended:
        assert buffers.rewards[i] == 0.0
        assert not buffers.terminations[i]
        assert not buffers.truncations[i]
        assert buffers.elapsed[i] == 0
    assert buffers.pending_resets == [
        i for i in range(NUM_ENVS) if buffers.terminations[i] or buffers.truncations[i]
    ]


def test_a_client_time_limit_truncates(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    connections, template = fleet
    buffers = _buffers(template, add_info, max_episode_steps=2)
    _reset(connections, buffers)
    actions = np.array([0, 1, 0])
    _step(connections, template, buffers, actions)
    assert not buffers.truncations.any()
    assert buffers.elapsed.tolist() == [1, 1, 1]
    _step(connections, template, buffers, actions)
    assert buffers.truncations.tolist() == [True] * NUM_ENVS
    assert not buffers.terminations.any()
    assert buffers.pending_resets == [0, 1, 2]


def test_same_step_hands_ended_episodes_back_and_leaves_no_pending_reset(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    connections, template = fleet
    buffers = _buffers(template, add_info, AutoresetMode.SAME_STEP, max_episode_steps=1)
    _reset(connections, buffers)
    _, ended = _step(connections, template, buffers, np.array([1, 1, 1]))
    # The server was not asked to reset (no same_step_reset): the caller must, for all.
    assert sorted(ended) == [0, 1, 2]
    assert buffers.truncations.tolist() == [True] * NUM_ENVS
    assert buffers.pending_resets == []


def test_a_reconnected_sub_env_ends_truncated(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    connections, template = fleet
    buffers = _buffers(template, add_info)
    _reset(connections, buffers)
    _step(connections, template, buffers, np.array([0, 0, 0]))
    buffers.mark_reconnected(2)
    buffers.end_step()
    assert buffers.rewards[2] == 0.0
    assert buffers.truncations[2]
    assert not buffers.terminations[2]
    assert buffers.pending_resets == [2]


def test_action_masks_need_a_legal_actions_field(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    _, template = fleet
    buffers = _buffers(template, add_info)
    with pytest.raises(ActionMaskUnavailableError, match="no action masks"):
        buffers.action_masks(template.action_codec)


def test_an_observation_that_does_not_fit_names_the_sub_envs_and_server(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    _, template = fleet
    buffers = _buffers(template, add_info)
    key = template.observation_codec.key
    assert key is not None
    wrong = BatchResult([0, 1], {key: [[0.0, 1.0], [2.0, 3.0]]}, [None, None], [False, False])
    with pytest.raises(OpenEnvGymError) as caught:
        buffers.take_resets([1, 2], wrong, {})
    assert "(from sub-envs [1, 2] of the vector env, at http://server-of-1)" in (
        caught.value.__notes__
    )


def test_rows_sent_out_of_order_land_in_their_sub_envs(
    fleet: tuple[Connections, OpenEnvEnv], add_info: Any
) -> None:
    """A reply may list its sessions in any order: each row goes to the sub-env it names
    (rows are written through a slice only when the sub-envs run one by one)."""
    connections, template = fleet
    buffers = _buffers(template, add_info)
    _reset(connections, buffers)
    wires = template.action_codec.encode_batch(np.array([0, 1, 0]), NUM_ENVS)
    [(indices, result)] = _round_trip(connections, [("step", wire) for wire in wires])
    order = [2, 0, 1]
    permuted = BatchResult(
        [result.indices[k] for k in order],
        {key: np.asarray(value)[order] for key, value in result.fields.items()},
        [result.reward[k] for k in order],
        [result.done[k] for k in order],
    )
    buffers.take_steps(indices, permuted, None, {}, {})
    expected = template.observation_codec.decode_batch(result.fields, NUM_ENVS)
    np.testing.assert_array_equal(buffers.observations, expected)
    assert buffers.rewards.tolist() == result.reward
    assert buffers.terminations.tolist() == result.done
    assert buffers.elapsed.tolist() == [1, 1, 1]
