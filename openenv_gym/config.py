"""One experiment config: the env, how many copies, and an ordered pipeline of wrappers.

A config is a dict, a YAML file or a JSON file::

    env:
      id: openenv/CartPole-v1          # a Gymnasium id (openenv/... ids run remotely)
      base_url: http://127.0.0.1:8000  # a running server (else an embedded one is started)
      kwargs: {}                       # more gym.make keyword arguments
      max_episode_steps: 500
    num_envs: 4                        # 1: a gymnasium.Env; more: a VectorEnv
    vectorization: auto                # auto | native | sync | async
    autoreset_mode: next_step          # next_step | same_step | disabled (vector envs)
    seed: 0                            # the first reset's seed (openenv-gym record uses it)
    wrappers:                          # applied in order, innermost first
      - {type: terminate_when, conditions: [{field_bound: {key: 0, low: -1.0, high: 1.0}}]}
      - {type: shape_reward, terms: [{scale: 0.1}]}
      - {type: action_noise, kind: epsilon, epsilon: 0.1}
      - {type: record, directory: runs/cartpole}

:func:`make_from_config` builds it. With ``num_envs > 1`` every wrapper uses its vector form
(:mod:`openenv_gym.wrappers.registry` lists them); wrappers without one (``TimeLimit``,
``FrameStackObservation``, ``AtariPreprocessing``, ``terminate_when`` in ``next_step`` mode)
are applied to each sub-env, which needs a Sync/Async vector env of single envs: ``auto``
then picks ``sync``, and ``native`` (our one-event-loop vector env) refuses with the entry's
path. The ``record`` wrapper saves the resolved config (defaults filled in, with the package
version) as ``experiment.yaml`` beside the data, so ``openenv-gym record --config`` on that
file reproduces the run. Every error names its place in the config (``wrappers[2].sigma``).

Example:
    >>> env = make_from_config({"env": {"id": "CartPole-v1"},
    ...                         "wrappers": [{"type": "TimeLimit", "max_episode_steps": 5}]})
    >>> _ = env.reset(seed=0)
    >>> [env.step(0)[3] for _ in range(5)][-1]
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv
from pydantic import BaseModel, ConfigDict, PositiveInt, SerializeAsAny, model_validator

from openenv_gym.config_files import load_config, validate
from openenv_gym.errors import WrapperConfigError
from openenv_gym.registration import register_all
from openenv_gym.version import __version__
from openenv_gym.wrappers.registry import BuildContext, WrapperSpec, parse_wrapper

__all__ = ["EnvConfig", "ExperimentConfig", "load_experiment", "make_from_config"]

REMOTE_ENV_ID = "openenv/Remote-v0"


class EnvConfig(BaseModel):
    """The ``env:`` section: which env, where, with which arguments."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    base_url: str | None = None
    kwargs: dict[str, Any] = {}
    max_episode_steps: PositiveInt | None = None

    @model_validator(mode="after")
    def _somewhere(self) -> EnvConfig:
        if self.id is None and self.base_url is None:
            raise ValueError("give an env 'id' (a Gymnasium id) or a 'base_url' (a server)")
        return self

    @property
    def gym_id(self) -> str:
        """The registered id (``openenv/Remote-v0`` for a bare ``base_url``), without the
        ``module:`` prefix Gymnasium accepts (``ale_py:ALE/Pong-v5``)."""
        return (self.id or REMOTE_ENV_ID).rpartition(":")[2]

    def register(self) -> None:
        """Import what registers the id: this package, and the ``module:`` of ``module:id``.

        Raises:
            WrapperConfigError: The module cannot be imported.
        """
        register_all()

        module = (self.id or "").rpartition(":")[0]
        if module:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise WrapperConfigError(
                    f"env.id: cannot import {module!r} to register {self.id!r}: {exc}",
                    path="env.id",
                ) from exc

    def make_kwargs(self) -> dict[str, Any]:
        """``gym.make`` keyword arguments."""
        kwargs = dict(self.kwargs)
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.max_episode_steps is not None:
            kwargs["max_episode_steps"] = self.max_episode_steps
        return kwargs


class ExperimentConfig(BaseModel):
    """A whole experiment (see the module docstring). Build it with :func:`load_experiment`."""

    model_config = ConfigDict(extra="forbid")
    env: EnvConfig
    num_envs: PositiveInt = 1
    vectorization: Literal["auto", "native", "sync", "async"] = "auto"
    autoreset_mode: Literal["next_step", "same_step", "disabled"] = "next_step"
    seed: int | None = None
    wrappers: list[SerializeAsAny[WrapperSpec]] = []
    #: The package version that resolved the config (written beside recordings).
    openenv_gym_version: str | None = None

    def resolved(self) -> dict[str, Any]:
        """The config with every default filled in and this package's version (JSON-able)."""
        data = self.model_dump(mode="json")
        data["openenv_gym_version"] = __version__
        return data


def load_experiment(config: ExperimentConfig | Mapping[str, Any] | str | Path) -> ExperimentConfig:
    """An :class:`ExperimentConfig` from a model, a dict, or a YAML / JSON file.

    Raises:
        WrapperConfigError: Unreadable file or invalid config; ``path`` names the entry.
    """
    if isinstance(config, ExperimentConfig):
        return config
    data = load_config(config) if isinstance(config, str | Path) else config
    if not isinstance(data, Mapping):
        raise WrapperConfigError(
            f"an experiment config is a mapping with 'env' and 'wrappers', got {data!r:.80}"
        )
    entries = data.get("wrappers") or []
    if not isinstance(entries, list):
        raise WrapperConfigError(
            f"wrappers: expected a list of {{type: ..., ...}} mappings, got {entries!r:.80}",
            path="wrappers",
        )
    base = validate(ExperimentConfig, {**data, "wrappers": []})
    specs = [parse_wrapper(entry, index) for index, entry in enumerate(entries)]
    return base.model_copy(update={"wrappers": specs})


def _per_env_prefix(cfg: ExperimentConfig) -> int:
    """How many leading wrappers must wrap each sub-env (the last one without a vector form)."""
    count = 0
    for index, spec in enumerate(cfg.wrappers):
        if not spec.has_vector_form(cfg.autoreset_mode):
            count = index + 1
    return count


def _context(cfg: ExperimentConfig, index: int, record_to: Path | None) -> BuildContext:
    return BuildContext(
        path=f"wrappers[{index}]",
        autoreset_mode=cfg.autoreset_mode if cfg.num_envs > 1 else None,
        record_to=record_to,
        resolved_config=cfg.resolved(),
        env_id=cfg.env.gym_id,
    )


def make_from_config(
    config: ExperimentConfig | Mapping[str, Any] | str | Path,
    *,
    record_to: str | Path | None = None,
) -> gym.Env[Any, Any] | VectorEnv:
    """Build the env (``num_envs == 1``) or vector env a config declares, wrappers included.

    Args:
        config: An :class:`ExperimentConfig`, a dict, or a YAML / JSON file.
        record_to: Overrides the ``record`` wrapper's ``directory``.

    Raises:
        WrapperConfigError: Invalid config, or a wrapper that cannot be built (named by path).
    """
    cfg = load_experiment(config)
    out = Path(record_to) if record_to is not None else None
    cfg.env.register()

    if cfg.num_envs == 1:
        env: gym.Env[Any, Any] = gym.make(cfg.env.gym_id, **cfg.env.make_kwargs())
        for index, spec in enumerate(cfg.wrappers):
            env = _closing_on_error(
                env, lambda e, i=index, s=spec: s.wrap(e, _context(cfg, i, out))
            )
        return env
    prefix = _per_env_prefix(cfg)
    venv = _make_vector(cfg, prefix, out)
    for index in range(prefix, len(cfg.wrappers)):
        spec = cfg.wrappers[index]
        venv = _closing_on_error(
            venv, lambda v, i=index, s=spec: s.wrap_vector(v, _context(cfg, i, out))
        )
    return venv


def _closing_on_error(env: Any, wrap: Any) -> Any:
    try:
        return wrap(env)
    except BaseException:
        env.close()
        raise


def _make_vector(cfg: ExperimentConfig, prefix: int, out: Path | None) -> VectorEnv:
    mode = AutoresetMode[cfg.autoreset_mode.upper()]
    spec = gym.spec(cfg.env.gym_id)
    vectorization = cfg.vectorization
    native_possible = spec.vector_entry_point is not None
    if vectorization == "native":
        if prefix:
            bad = next(
                i for i, s in enumerate(cfg.wrappers) if not s.has_vector_form(cfg.autoreset_mode)
            )
            raise WrapperConfigError(
                f"wrappers[{bad}]: {cfg.wrappers[bad].type} has no vector form in the "
                f"{cfg.autoreset_mode} autoreset mode, so it cannot wrap the native vector env; "
                "set vectorization: sync (or async)",
                path=f"wrappers[{bad}]",
            )
        if not native_possible:
            raise WrapperConfigError(
                f"vectorization: {cfg.env.gym_id} has no native vector env (only openenv/ ids "
                "do); use auto, sync or async",
                path="vectorization",
            )
    for index in range(prefix):
        if cfg.wrappers[index].type == "record":
            raise WrapperConfigError(
                f"wrappers[{index}]: record must come after every wrapper that wraps each "
                f"sub-env (the last is wrappers[{prefix - 1}], {cfg.wrappers[prefix - 1].type}): "
                "all sub-envs record into one directory",
                path=f"wrappers[{index}]",
            )
    if vectorization == "auto":
        vectorization = "native" if native_possible and not prefix else "sync"
    kwargs = cfg.env.make_kwargs()
    if vectorization == "native":
        return gym.make_vec(
            cfg.env.gym_id,
            cfg.num_envs,
            vectorization_mode="vector_entry_point",
            autoreset_mode=mode,
            **kwargs,
        )
    per_env = [
        (lambda e, i=i, s=cfg.wrappers[i]: s.wrap(e, _context(cfg, i, out))) for i in range(prefix)
    ]
    return gym.make_vec(
        cfg.env.gym_id,
        cfg.num_envs,
        vectorization_mode=vectorization,
        vector_kwargs={"autoreset_mode": mode},
        wrappers=per_env,
        **kwargs,
    )
