"""The one registry of wrappers an experiment config can name, with their pydantic specs.

Every entry of a config's ``wrappers:`` list is a mapping with a ``type`` and that wrapper's
options. Each spec builds the single-env form and, where one exists, the vector form:

=========================  ======================================  ========================
``type``                   single env                              vector env
=========================  ======================================  ========================
``TimeLimit``              ``gymnasium.wrappers.TimeLimit``        (per sub-env)
``FrameStackObservation``  ``gymnasium.wrappers.FrameStackObs..``  (per sub-env)
``AtariPreprocessing``     ``gymnasium.wrappers.AtariPreproc..``   (per sub-env)
``RecordEpisodeStatistics`` Gymnasium's                            Gymnasium's vector form
``ClipAction``             Gymnasium's                             Gymnasium's vector form
``RescaleAction``          Gymnasium's                             Gymnasium's vector form
``FlattenObservation``     Gymnasium's                             Gymnasium's vector form
``ClipReward``             Gymnasium's                             Gymnasium's vector form
``shape_reward``           :class:`ShapeReward`                    :class:`VectorShapeReward`
``normalize``              :class:`Normalize`                      :class:`VectorNormalize`
``action_noise``           :class:`ActionNoise`                    :class:`VectorActionNoise`
``terminate_when``         :class:`TerminateWhen`                  :class:`VectorTerminateWhen`
                                                                   (``same_step``/``disabled``)
``record``                 :class:`RecordTrajectories`             :class:`VectorRecordTrajectories`
=========================  ======================================  ========================

A wrapper without a vector form is applied to each sub-env (inside a Sync/Async vector env);
see :func:`openenv_gym.make_from_config`.

Example:
    >>> spec = parse_wrapper({"type": "action_noise", "kind": "gaussian", "sigma": 0.1}, 0)
    >>> type(spec).__name__, spec.sigma
    ('ActionNoiseSpec', 0.1)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import gymnasium as gym
from gymnasium.vector import VectorEnv
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PlainValidator,
    PositiveInt,
    model_validator,
)

from openenv_gym.config_files import validate
from openenv_gym.errors import WrapperConfigError
from openenv_gym.wrappers.noise import (
    ActionNoise,
    EpsilonRandom,
    GaussianNoise,
    NoiseProcess,
    OrnsteinUhlenbeckNoise,
    VectorActionNoise,
)
from openenv_gym.wrappers.normalization import Normalize, VectorNormalize
from openenv_gym.wrappers.recording import RecordTrajectories, VectorRecordTrajectories
from openenv_gym.wrappers.shaping import (
    Number,
    ShapeReward,
    TermConfig,
    VectorShapeReward,
)
from openenv_gym.wrappers.termination import (
    Condition,
    ConditionConfig,
    TerminateWhen,
    VectorTerminateWhen,
)

__all__ = ["WRAPPERS", "BuildContext", "WrapperSpec", "parse_wrapper"]

AutoresetName = Literal["next_step", "same_step", "disabled"]


def _numbers(value: Any) -> float | list[float]:
    """A finite number, or a list of them (one per action dimension)."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            raise ValueError("expected a finite number or a list of finite numbers")
    return [float(v) for v in items] if isinstance(value, list) else float(value)


def _non_negative(value: Any) -> float | list[float]:
    numbers = _numbers(value)
    if min(numbers if isinstance(numbers, list) else [numbers]) < 0:
        raise ValueError("expected numbers >= 0")
    return numbers


Numbers = Annotated[float | list[float], PlainValidator(_numbers)]
NonNegativeNumbers = Annotated[float | list[float], PlainValidator(_non_negative)]


@dataclass
class BuildContext:
    """What a spec may need beyond its own options while an env is built.

    Attributes:
        path: Where the spec sits in the config (``wrappers[3]``), for error messages.
        autoreset_mode: The vector env's autoreset mode (``None`` for a single env).
        record_to: A directory that overrides the ``record`` wrapper's ``directory``.
        resolved_config: The whole config as saved beside a recording.
        env_id: The env id, for the recording's metadata.
    """

    path: str
    autoreset_mode: AutoresetName | None = None
    record_to: Path | None = None
    resolved_config: Mapping[str, Any] = field(default_factory=dict)
    env_id: str | None = None


class WrapperSpec(BaseModel):
    """One ``wrappers:`` entry; subclasses declare ``type`` and the options."""

    model_config = ConfigDict(extra="forbid")
    type: str

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        """The single-env form around ``env``."""
        raise NotImplementedError

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        """Whether :meth:`wrap_vector` works on a vector env in this autoreset mode."""
        return False

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        """The vector form around ``env`` (only when :meth:`has_vector_form`)."""
        raise WrapperConfigError(
            f"{context.path}: {self.type} has no vector form", path=context.path
        )


# --------------------------------------------------------------------------- Gymnasium's


class _GymnasiumSpec(WrapperSpec):
    """A Gymnasium wrapper of the ``type``'s name (or ``single``): it takes the spec's options;
    with ``vector``, ``gymnasium.wrappers.vector`` has a class of the same name."""

    single: ClassVar[str | None] = None
    vector: ClassVar[bool] = False

    def _options(self) -> dict[str, Any]:
        return self.model_dump(exclude={"type"})

    @property
    def _name(self) -> str:
        return self.single or self.type

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        wrapper = getattr(gym.wrappers, self._name)
        try:
            return wrapper(env, **self._options())
        except (AssertionError, ValueError, TypeError, gym.error.Error) as exc:
            raise WrapperConfigError(
                f"{context.path}: {self._name}({self._options()}) failed on {env}: {exc}",
                path=context.path,
            ) from exc

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return self.vector

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        wrapper = getattr(gym.wrappers.vector, self._name)
        return wrapper(env, **self._options())


class TimeLimitSpec(_GymnasiumSpec):
    type: Literal["TimeLimit"]
    max_episode_steps: PositiveInt


class FrameStackSpec(_GymnasiumSpec):
    type: Literal["FrameStackObservation", "FrameStack"]
    single: ClassVar[str | None] = "FrameStackObservation"
    stack_size: PositiveInt
    padding_type: Literal["reset", "zero"] = "reset"


class AtariPreprocessingSpec(_GymnasiumSpec):
    type: Literal["AtariPreprocessing"]
    noop_max: NonNegativeInt = 30
    frame_skip: PositiveInt = 4
    screen_size: PositiveInt = 84
    terminal_on_life_loss: bool = False
    grayscale_obs: bool = True
    grayscale_newaxis: bool = False
    scale_obs: bool = False


class EpisodeStatisticsSpec(_GymnasiumSpec):
    type: Literal["RecordEpisodeStatistics"]
    vector: ClassVar[bool] = True
    buffer_length: PositiveInt = 100


class ClipActionSpec(_GymnasiumSpec):
    type: Literal["ClipAction"]
    vector: ClassVar[bool] = True


class RescaleActionSpec(_GymnasiumSpec):
    type: Literal["RescaleAction"]
    vector: ClassVar[bool] = True
    min_action: Numbers
    max_action: Numbers


class FlattenObservationSpec(_GymnasiumSpec):
    type: Literal["FlattenObservation"]
    vector: ClassVar[bool] = True


class ClipRewardSpec(_GymnasiumSpec):
    type: Literal["ClipReward"]
    vector: ClassVar[bool] = True
    min_reward: Number | None = None
    max_reward: Number | None = None


# --------------------------------------------------------------------------- ours


class ShapeRewardSpec(WrapperSpec):
    """``{type: shape_reward, terms: [{scale: 0.1}, ...]}`` (see :mod:`.shaping`)."""

    type: Literal["shape_reward"]
    terms: Annotated[list[TermConfig], Field(min_length=1)]

    def _shaper(self, context: BuildContext) -> Any:
        from openenv_gym.wrappers.shaping import RewardShaper

        return RewardShaper(
            [t.build(f"{context.path}.terms[{i}]") for i, t in enumerate(self.terms)]
        )

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        return ShapeReward(env, self._shaper(context))

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return True

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        return VectorShapeReward(env, self._shaper(context))


class NormalizeSpec(WrapperSpec):
    """``{type: normalize, reward: false, clip_obs: 5.0}`` (see :mod:`.normalization`)."""

    type: Literal["normalize"]
    observation: bool = True
    reward: bool = True
    keys: list[str] | None = None
    gamma: Annotated[Number, Field(ge=0.0, le=1.0)] = 0.99
    clip_obs: Annotated[Number, Field(gt=0.0)] = 10.0
    clip_reward: Annotated[Number, Field(gt=0.0)] = 10.0
    epsilon: Annotated[Number, Field(gt=0.0)] = 1e-8
    training: bool = True

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        return Normalize(env, **self.model_dump(exclude={"type"}))

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return True

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        return VectorNormalize(env, **self.model_dump(exclude={"type"}))


class ActionNoiseSpec(WrapperSpec):
    """``{type: action_noise, kind: gaussian | ornstein_uhlenbeck | epsilon, ...}``."""

    type: Literal["action_noise"]
    kind: Literal["gaussian", "ornstein_uhlenbeck", "epsilon"]
    sigma: NonNegativeNumbers | None = None
    mean: Numbers = 0.0
    theta: Annotated[Number, Field(gt=0.0)] = 0.15
    dt: Annotated[Number, Field(gt=0.0)] = 1e-2
    x0: Numbers = 0.0
    epsilon: Annotated[Number, Field(ge=0.0, le=1.0)] | None = None
    clip: bool = True

    @model_validator(mode="after")
    def _fits_kind(self) -> ActionNoiseSpec:
        if self.kind == "epsilon":
            if self.epsilon is None:
                raise ValueError("kind 'epsilon' needs 'epsilon' (a probability)")
            if self.sigma is not None:
                raise ValueError("'sigma' goes with kind gaussian or ornstein_uhlenbeck")
        else:
            if self.sigma is None:
                raise ValueError(f"kind {self.kind!r} needs 'sigma'")
            if self.epsilon is not None:
                raise ValueError("'epsilon' goes with kind 'epsilon'")
        return self

    def noise(self) -> NoiseProcess:
        """The noise process these options declare."""
        if self.kind == "epsilon":
            return EpsilonRandom(float(self.epsilon or 0.0))
        sigma = self.sigma if self.sigma is not None else 0.0
        if self.kind == "gaussian":
            return GaussianNoise(sigma=sigma, mean=self.mean, clip=self.clip)
        return OrnsteinUhlenbeckNoise(
            sigma=sigma, theta=self.theta, dt=self.dt, mean=self.mean, x0=self.x0, clip=self.clip
        )

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        return ActionNoise(env, _at(context, self.noise, env.action_space))

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return True

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        return VectorActionNoise(env, _at(context, self.noise, env.single_action_space))


def _at(context: BuildContext, make: Any, space: Any) -> Any:
    """``make()`` checked against ``space``, errors re-pointed at the config entry."""
    return _rebased(context, lambda: _checked_noise(make(), space))


def _checked_noise(noise: NoiseProcess, space: Any) -> NoiseProcess:
    noise.check_space(space)
    return noise


class TerminateWhenSpec(WrapperSpec):
    """``{type: terminate_when, conditions: [{field_bound: {key: 0, high: 2.0}}, ...]}``."""

    type: Literal["terminate_when"]
    conditions: Annotated[list[ConditionConfig], Field(min_length=1)]

    def _conditions(self, context: BuildContext) -> list[Condition]:
        out = []
        for index, condition in enumerate(self.conditions):
            where = BuildContext(path=f"{context.path}.conditions[{index}]")
            out.append(_rebased(where, condition.build))
        return out

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        return _rebased(context, lambda: TerminateWhen(env, self._conditions(context)))

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return autoreset_mode != "next_step"

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        return _rebased(context, lambda: VectorTerminateWhen(env, self._conditions(context)))


def _rebased(context: BuildContext, build: Any) -> Any:
    """``build()``, a :class:`WrapperConfigError` re-pointed at the spec's place in the config."""
    try:
        return build()
    except WrapperConfigError as exc:
        if exc.path.startswith(context.path):
            raise
        path = f"{context.path}.{exc.path}" if exc.path else context.path
        message = str(exc).removeprefix(f"{exc.path}: ")
        raise WrapperConfigError(f"{path}: {message}", path=path) from None


class RecordSpec(WrapperSpec):
    """``{type: record, directory: runs/x, info_keys: [lives], chunk_size: 10000}``.

    The resolved experiment config is saved beside the data (``experiment.yaml``).
    """

    type: Literal["record"]
    directory: str | None = None
    info_keys: list[str] | dict[str, Literal["float64", "int64", "bool", "string"]] = []
    chunk_size: PositiveInt = 10_000
    max_chunk_bytes: PositiveInt = 64 * 1024 * 1024

    def _directory(self, context: BuildContext) -> Path:
        if context.record_to is not None:
            return context.record_to
        if self.directory is None:
            raise WrapperConfigError(
                f"{context.path}.directory: required (or pass --out / record_to=)",
                path=f"{context.path}.directory",
            )
        return Path(self.directory)

    def _options(self, context: BuildContext) -> dict[str, Any]:
        return {
            "info_keys": self.info_keys,
            "chunk_size": self.chunk_size,
            "max_chunk_bytes": self.max_chunk_bytes,
            "env_id": context.env_id,
            "metadata": {"experiment": self._experiment(context)},
        }

    def _experiment(self, context: BuildContext) -> dict[str, Any]:
        """The resolved config, this entry's ``directory`` set to where the data went."""
        resolved = copy.deepcopy(dict(context.resolved_config))
        for entry in resolved.get("wrappers", []):
            if entry.get("type") == "record":
                entry["directory"] = str(self._directory(context))
        return resolved

    def wrap(self, env: gym.Env[Any, Any], context: BuildContext) -> gym.Env[Any, Any]:
        recorder = RecordTrajectories(env, self._directory(context), **self._options(context))
        _save_config(recorder.writer, self._experiment(context))
        return recorder

    def has_vector_form(self, autoreset_mode: AutoresetName) -> bool:
        return True

    def wrap_vector(self, env: VectorEnv, context: BuildContext) -> VectorEnv:
        recorder = VectorRecordTrajectories(env, self._directory(context), **self._options(context))
        _save_config(recorder.writer, self._experiment(context))
        return recorder


def _save_config(writer: Any, experiment: Mapping[str, Any]) -> None:
    from openenv_gym.trajectories.layout import CONFIG_FILE

    if experiment:
        writer.write_file(CONFIG_FILE, dump_yaml(experiment))


def dump_yaml(data: Mapping[str, Any]) -> str:
    """YAML text of a JSON-able mapping (JSON, itself valid YAML, without pyyaml)."""
    try:
        import yaml
    except ImportError:
        import json

        return json.dumps(data, indent=2) + "\n"
    return str(yaml.safe_dump(dict(data), sort_keys=False))


#: Every wrapper a config can name, by ``type``.
WRAPPERS: dict[str, type[WrapperSpec]] = {
    name: spec
    for spec in (
        TimeLimitSpec,
        FrameStackSpec,
        AtariPreprocessingSpec,
        EpisodeStatisticsSpec,
        ClipActionSpec,
        RescaleActionSpec,
        FlattenObservationSpec,
        ClipRewardSpec,
        ShapeRewardSpec,
        NormalizeSpec,
        ActionNoiseSpec,
        TerminateWhenSpec,
        RecordSpec,
    )
    for name in spec.model_fields["type"].annotation.__args__  # type: ignore[union-attr]
}


def parse_wrapper(entry: Any, index: int) -> WrapperSpec:
    """The spec of ``wrappers[index]``.

    Raises:
        WrapperConfigError: Unknown ``type`` or bad options; ``path`` is ``wrappers[i].key``.
    """
    path = f"wrappers[{index}]"
    if not isinstance(entry, Mapping) or "type" not in entry:
        raise WrapperConfigError(
            f"{path} must be a mapping with a 'type' (one of {sorted(WRAPPERS)}), got {entry!r}",
            path=path,
        )
    spec = WRAPPERS.get(str(entry["type"]))
    if spec is None:
        raise WrapperConfigError(
            f"{path}.type: unknown wrapper {entry['type']!r}; expected one of {sorted(WRAPPERS)}",
            path=f"{path}.type",
        )
    return validate(spec, entry, prefix=path)
