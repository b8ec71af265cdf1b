"""A native Stable-Baselines3 ``VecEnv`` over remote OpenEnv sessions, and ``make_vec_env``.

:class:`OpenEnvVecEnv` drives an :class:`~openenv_gym.vector.OpenEnvVectorEnv` in Gymnasium's
``SAME_STEP`` autoreset mode, which is SB3's convention: when a sub-env's episode ends, the
returned observation is already the next episode's first one, ``info["terminal_observation"]``
holds the last observation and ``info["TimeLimit.truncated"]`` says whether the episode was cut
short (truncated and not terminated). Seeds (``seed``) and options (``set_options``) are
applied at the next ``reset``, once, like ``DummyVecEnv``.

The sub-envs are sessions on servers, not Python objects: ``get_attr``/``set_attr`` read and
write attributes of the vector env, which all sub-envs share (``observation_space`` and
``action_space`` are the single-env spaces); ``env_method("state")`` returns each session's
server-side state; no sub-env is wrapped by a ``gymnasium.Wrapper``.

Example:
    >>> from stable_baselines3 import PPO
    >>> from openenv_gym.integrations.sb3 import make_vec_env
    >>> vec = make_vec_env("openenv/CartPole-v1", n_envs=4, seed=0)
    >>> model = PPO("MlpPolicy", vec, n_steps=32, batch_size=64).learn(128)
    >>> model.num_timesteps
    128
    >>> vec.close()
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from openenv_gym.errors import VectorUsageError
from openenv_gym.extras import optional_imports
from openenv_gym.vector import OpenEnvVectorEnv

with optional_imports("openenv_gym.integrations.sb3 (Stable-Baselines3 VecEnv)"):
    from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecMonitor
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnvIndices,
        VecEnvObs,
        VecEnvStepReturn,
    )

#: get_attr names that mean the single-env value of the vector env.
_SINGLE_ATTRIBUTES = {
    "observation_space": "single_observation_space",
    "action_space": "single_action_space",
}


class OpenEnvVecEnv(VecEnv):
    """An SB3 ``VecEnv`` whose sub-envs are sessions of an :class:`OpenEnvVectorEnv`.

    Args:
        vector_env: The Gymnasium vector env to drive; it must use ``SAME_STEP`` autoreset
            (build it with ``autoreset_mode=AutoresetMode.SAME_STEP``, or use
            :func:`make_vec_env`). The adapter owns it: :meth:`close` closes it.

    Raises:
        VectorUsageError: ``vector_env`` is not an ``OpenEnvVectorEnv`` in SAME_STEP mode.
    """

    def __init__(self, vector_env: OpenEnvVectorEnv) -> None:
        if not isinstance(vector_env, OpenEnvVectorEnv):
            raise VectorUsageError(
                f"expected an OpenEnvVectorEnv, got {type(vector_env).__name__}; use "
                "openenv_gym.integrations.sb3.make_vec_env(...) to build one"
            )
        if vector_env.autoreset_mode != AutoresetMode.SAME_STEP:
            raise VectorUsageError(
                "SB3 resets finished episodes in the same step: build the vector env with "
                f"autoreset_mode=AutoresetMode.SAME_STEP, not {vector_env.autoreset_mode}"
            )
        self.vector_env = vector_env
        super().__init__(
            vector_env.num_envs,
            vector_env.single_observation_space,
            vector_env.single_action_space,
        )

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> VecEnvObs:
        """Reset every sub-env with the pending seeds and options (then forget them)."""
        indices = list(range(self.num_envs))
        obs, infos = self.vector_env.reset_each(indices, self._seeds, self._options)
        self.reset_infos = _unbatch_infos(infos, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Send the actions to every sub-env at once; :meth:`step_wait` collects."""
        self.vector_env.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        """Collect the step; ended sub-envs are reset at once (see the module doc).

        Raises:
            VectorUsageError: No :meth:`step_async` is pending.
        """
        obs, rewards, terminations, truncations, batched = self.vector_env.step_wait()
        dones = terminations | truncations
        infos = _unbatch_infos(batched, self.num_envs)
        final_obs = batched.get("final_obs")
        final_infos = _unbatch_infos(batched.get("final_info", {}), self.num_envs)
        for i in np.flatnonzero(dones).tolist():
            info = {**final_infos[i]}
            info["terminal_observation"] = final_obs[i] if final_obs is not None else None
            info["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
            # The reset info of the next episode goes to reset_infos, as in DummyVecEnv.
            self.reset_infos[i] = infos[i]
            infos[i] = info
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Close the vector env (its sessions and any server it started)."""
        self.vector_env.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute (shared by all sub-envs), once per index."""
        name = _SINGLE_ATTRIBUTES.get(attr_name, attr_name)
        value = getattr(self.vector_env, name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env; it is shared, so ``indices`` must be all."""
        chosen = list(self._get_indices(indices))
        if sorted(chosen) != list(range(self.num_envs)):
            raise VectorUsageError(
                f"the sub-envs share the vector env's attributes: set {attr_name!r} for all "
                f"of them (indices=None), not only {chosen}"
            )
        setattr(self.vector_env, attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """``"state"``: each session's server-side state; ``"action_masks"``: each sub-env's
        legal-action mask (sb3-contrib's ``MaskablePPO``); otherwise the vector env's method,
        called once and its result repeated per index."""
        chosen = list(self._get_indices(indices))
        if method_name == "state":
            states = self.vector_env.call_state()
            return [states[i] for i in chosen]
        if method_name == "action_masks":
            masks = self.vector_env.action_masks()
            return [masks[i] for i in chosen]
        result = getattr(self.vector_env, method_name)(*method_args, **method_kwargs)
        return [result for _ in chosen]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Always ``False``: the sub-envs are bare sessions."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Remote sessions render nothing here."""
        return [None for _ in range(self.num_envs)]

    def _get_indices(self, indices: VecEnvIndices) -> Iterable[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int | np.integer):
            return [int(indices)]
        return [int(i) for i in indices]

    def __repr__(self) -> str:
        return f"OpenEnvVecEnv({self.vector_env!r})"


def _unbatch_infos(batched: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's batched info dict (``key`` + ``_key`` masks) -> one dict per sub-env."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in batched.items():
        if key.startswith("_") or key == "final_obs":
            continue
        mask = batched.get(f"_{key}")
        if isinstance(value, dict):
            for i, sub in enumerate(_unbatch_infos(value, num_envs)):
                if sub or (mask is not None and mask[i]):
                    out[i][key] = sub
            continue
        if mask is None:
            continue
        rows = range(num_envs) if mask.all() else np.flatnonzero(mask).tolist()
        if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype != object:
            items = value.tolist()  # each value's .item(), in one call (a column of numbers)
            for i in rows:
                out[i][key] = items[i]
            continue
        for i in rows:
            item = value[i]
            out[i][key] = item.item() if isinstance(item, np.generic) else item
    return out


def make_vec_env(
    env_id: str | None,
    n_envs: int = 1,
    seed: int | None = None,
    *,
    env_kwargs: dict[str, Any] | None = None,
    monitor: bool = True,
    monitor_dir: str | None = None,
    monitor_kwargs: dict[str, Any] | None = None,
    wrapper_class: Callable[..., VecEnvWrapper] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
) -> VecEnv:
    """An SB3 ``VecEnv`` of ``n_envs`` sessions of ``env_id`` (like SB3's ``make_vec_env``).

    Args:
        env_id: A registered ``openenv/...`` id, or ``None`` with ``env_kwargs["base_url"]``.
        n_envs: The number of sub-envs (sessions).
        seed: Sub-env i is seeded ``seed + i`` at the first reset.
        env_kwargs: :class:`OpenEnvVectorEnv` options: ``base_url`` (one URL or a list),
            ``reconnect``, ``max_episode_steps``, timeouts, ``sessions_per_server`` and
            ``fleet`` (``"ray"``: servers placed on the Ray cluster of ``ray.init``), and
            the env's own options (``openenv/Atari-v0``: ``game`` and envpool's
            preprocessing options such as ``stack_num=4, episodic_life=True``, done on the
            server; see docs/servers.md), ...
        monitor: Wrap in ``VecMonitor`` (episode returns and lengths in ``info["episode"]``,
            which SB3's logger reads), as SB3's ``make_vec_env`` does with ``Monitor``.
        monitor_dir: Where ``VecMonitor`` writes its CSV (``None``: no file).
        monitor_kwargs: More ``VecMonitor`` arguments.
        wrapper_class: A ``VecEnvWrapper`` (e.g. ``VecFrameStack``) applied on top.
            Per-env ``gymnasium.Wrapper`` classes cannot wrap remote sessions: use SB3's
            own ``make_vec_env`` (``DummyVecEnv`` over single envs) for those.
        wrapper_kwargs: Arguments of ``wrapper_class``.

    Raises:
        VectorUsageError: ``wrapper_class`` is not a ``VecEnvWrapper``.

    Example:
        >>> vec = make_vec_env("openenv/CartPole-v1", n_envs=4, seed=0)
        >>> vec.reset().shape
        (4, 4)
        >>> vec.close()
    """
    if wrapper_class is not None and not (
        isinstance(wrapper_class, type) and issubclass(wrapper_class, VecEnvWrapper)
    ):
        raise VectorUsageError(
            f"expected wrapper_class to be a VecEnvWrapper subclass (e.g. VecFrameStack), got "
            f"{wrapper_class!r}; a gymnasium.Wrapper cannot wrap a remote session, use "
            "stable_baselines3.common.env_util.make_vec_env for per-env wrappers"
        )
    kwargs = dict(env_kwargs or {})
    kwargs["autoreset_mode"] = AutoresetMode.SAME_STEP
    vector_env = OpenEnvVectorEnv(env_id, n_envs, **kwargs)
    vec: VecEnv = OpenEnvVecEnv(vector_env)
    if seed is not None:
        vec.seed(seed)
    if monitor:
        filename = None if monitor_dir is None else f"{monitor_dir.rstrip('/')}/monitor.csv"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "already wrapped with a Monitor"
            vec = VecMonitor(vec, filename=filename, **dict(monitor_kwargs or {}))
    if wrapper_class is not None:
        vec = wrapper_class(vec, **dict(wrapper_kwargs or {}))
    return vec


__all__ = ["OpenEnvVecEnv", "make_vec_env"]
