"""What an envpool user types works on ``make_pool``, or is refused for its real reason
(issue 34, item 5): ``seed=``, ``num_threads=``, ``env_type=``, ``send({"action": a,
"env_id": ids})``, ``len(pool)``, int32 ``env_id`` and float32 rewards."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym import make_pool
from openenv_gym.errors import PoolUsageError
from openenv_gym.providers.local import LocalServerProcess


@pytest.fixture(scope="module")
def cartpole_server() -> Iterator[str]:
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
        assert server.base_url is not None
        yield server.base_url


def _first_observations(url: str, **kwargs: Any) -> np.ndarray:
    with make_pool(None, 3, base_url=url, **kwargs) as pool:
        obs, info = pool.reset()
        assert info["env_id"].tolist() == [0, 1, 2]
        return np.asarray(obs)


def test_seed_seeds_sub_env_i_with_seed_plus_i(cartpole_server: str) -> None:
    obs = _first_observations(cartpole_server, seed=5, num_threads=2, env_type="gymnasium")
    for i in range(3):
        expected, _ = gym.make("CartPole-v1").reset(seed=5 + i)
        np.testing.assert_array_equal(obs[i], expected)
    # A reset naming its seed wins over make_pool's.
    with make_pool(None, 3, base_url=cartpole_server, seed=5) as pool:
        again, _ = pool.reset(seed=9)
    np.testing.assert_array_equal(again[0], gym.make("CartPole-v1").reset(seed=9)[0])


def test_envpool_dtypes_and_len(cartpole_server: str) -> None:
    with make_pool(None, 4, batch_size=2, base_url=cartpole_server, seed=0) as pool:
        assert len(pool) == 4
        pool.async_reset()
        _, rew, _, _, info = pool.recv()
        assert info["env_id"].dtype == np.int32
        assert rew.dtype == np.float32
        pool.send({"action": np.zeros(2, dtype=np.int64), "env_id": info["env_id"]})
        _, rew, _, _, info = pool.recv()
        assert rew.dtype == np.float32
        assert info["env_id"].dtype == np.int32
        assert len(info["env_id"]) == 2
    with make_pool(None, 2, base_url=cartpole_server) as pool:  # synchronous: every sub-env
        pool.reset(seed=0)
        _, rew, _, _, info = pool.step(
            {"action": np.ones(2, dtype=np.int64)} | {"env_id": np.arange(2)}
        )
        assert rew.dtype == np.float32
        assert info["env_id"].dtype == np.int32


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_type": "dm"}, "env_type='dm': dm_env's TimeStep API is not provided"),
        ({"seed": "zero"}, "expected seed to be an int"),
        ({"seed": 1.5}, "expected seed to be an int"),
        ({"num_threads": -1}, "expected num_threads to be an int >= 0, got -1"),
    ],
)
def test_envpool_keywords_refused_for_their_reason(
    cartpole_server: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(PoolUsageError, match=message.replace("(", r"\(")) as caught:
        make_pool("openenv/CartPole-v1", 2, base_url=cartpole_server, **kwargs)
    assert "openenv/..." not in str(caught.value)  # not the wrong-id error of before


def test_the_dict_form_names_its_keys(cartpole_server: str) -> None:
    with make_pool(None, 2, batch_size=1, base_url=cartpole_server) as pool:
        pool.async_reset(seed=0)
        _, _, _, _, info = pool.recv()
        with pytest.raises(PoolUsageError, match=r"got the keys \['actions', 'env_id'\]"):
            pool.send({"actions": np.zeros(1, dtype=np.int64), "env_id": info["env_id"]})
        pool.send({"action": np.zeros(1, dtype=np.int64), "env_id": info["env_id"]})
        pool.recv()  # nothing was lost: the sub-env still steps
