"""The server envs openenv-gym ships, declared in one place.

Each :class:`ServerEnvSpec` names a server env once: its ``openenv-gym serve`` name and help,
its options, the builder of its server, the ``gym.make`` factory and ids of its client, its
Docker image and the extra it needs. Everything else is derived from :data:`SERVER_ENVS`:

* ``openenv-gym serve <name>`` (:mod:`openenv_gym.cli.serve`),
* the ``openenv/...`` Gymnasium ids (:mod:`openenv_gym.registration`),
* the images ``openenv-gym build`` makes (:data:`openenv_gym.images.env_images.IMAGES`),
* the "Needs ...: pip install ..." hint of the ``serve`` help.

Adding a server env is one entry here, its package under ``openenv_gym/envs/`` (options,
environment, server builder, client factory) and, for an image, its Dockerfile.

The builder and the client factory are dotted paths, imported only when used, so this module
(and ``openenv-gym serve --help``) needs no extra.

Example:
    >>> list(SERVER_ENVS)
    ['gymnasium', 'atari', 'chess']
    >>> [gym_id.name for gym_id in SERVER_ENVS["atari"].gym_ids]
    ['openenv/Atari-v0']
    >>> SERVER_ENVS["chess"].image.tag
    'openenv-gym/chess:latest'
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from openenv_gym.envs.atari.options import ATARI_OPTIONS
from openenv_gym.envs.chess.options import CHESS_OPTIONS
from openenv_gym.envs.gymnasium.options import GYMNASIUM_OPTIONS
from openenv_gym.envs.options import ServerOptions
from openenv_gym.extras import install_command

if TYPE_CHECKING:
    from openenv_gym.server.app import OpenEnvServer

#: The namespace of the Gymnasium ids this package registers.
NAMESPACE: Final = "openenv"

#: Gymnasium ids registered as ``openenv/<id>`` (served by our gymnasium server).
SERVED_GYMNASIUM_IDS: Final = (
    "CartPole-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Acrobot-v1",
    "Pendulum-v1",
)


@dataclass(frozen=True)
class GymId:
    """One Gymnasium id of a server env.

    Attributes:
        name: The full id (``openenv/CartPole-v1``).
        kwargs: Keywords the id passes to the client factory (``{"env_id": "CartPole-v1"}``).
        limits_of: A local Gymnasium id whose ``max_episode_steps`` and ``reward_threshold``
            the id takes (``gym.make`` then adds the same TimeLimit the server applies).
    """

    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    limits_of: str | None = None


@dataclass(frozen=True)
class ServerImage:
    """The Docker image of a server env.

    Attributes:
        dockerfile: Its Dockerfile, relative to the repository root.
        tag: The local tag ``openenv-gym build`` gives it.
        extra: The project extra the image installs (``None``: the base dependencies).
    """

    dockerfile: str
    tag: str
    extra: str | None


@dataclass(frozen=True)
class ServerEnvSpec:
    """One server env.

    Attributes:
        name: The ``openenv-gym serve`` sub-command and the image's short name.
        help: One line for ``openenv-gym serve --help``.
        description: The sub-command's ``--help`` description (the extra's hint is added).
        options: The server's own options (:class:`~openenv_gym.envs.options.ServerOptions`).
        gym_ids: The Gymnasium ids registered for it.
        extra: The extra its server needs (``None``: none).
        image_extra: The extra its Docker image installs (``None``: the base dependencies).

    Each lives in ``openenv_gym.envs.<name>``, whose ``server.<name>_server`` builds the server
    and ``client.make_<name>_env`` is the ``gym.make`` entry point; its image is built from
    ``docker/<name>.Dockerfile``.
    """

    name: str
    help: str
    description: str
    options: ServerOptions
    gym_ids: tuple[GymId, ...]
    extra: str | None
    image_extra: str | None

    @property
    def package(self) -> str:
        """The package holding the server env (the image needs it in the source tree)."""
        return f"openenv_gym.envs.{self.name}"

    @property
    def server(self) -> str:
        """``"package.module:function"`` building the :class:`~openenv_gym.server.OpenEnvServer`
        from the options and the server keywords (raising on bad options)."""
        return f"{self.package}.server:{self.name}_server"

    @property
    def client(self) -> str:
        """``"package.module:function"``, the ``gym.make`` entry point of its ids."""
        return f"{self.package}.client:make_{self.name}_env"

    @property
    def image(self) -> ServerImage:
        """Its Docker image."""
        return ServerImage(
            f"docker/{self.name}.Dockerfile", f"openenv-gym/{self.name}:latest", self.image_extra
        )

    @property
    def serve_description(self) -> str:
        """:attr:`description`, with how to install the extra when the server needs one."""
        if self.extra is None:
            return self.description
        return f"{self.description}\nNeeds the {self.extra} extra: {install_command(self.extra)}."

    def options_of(self, args: argparse.Namespace) -> dict[str, Any]:
        """The options mapping of parsed ``openenv-gym serve <name>`` arguments."""
        return self.options.from_namespace(args)

    def build_server(self, options: Mapping[str, Any], **server_kwargs: Any) -> OpenEnvServer:
        """Build the server (imports the builder, and so the extra)."""
        module, _, function = self.server.partition(":")
        build: Callable[..., OpenEnvServer] = getattr(importlib.import_module(module), function)
        return build(**options, **server_kwargs)


#: The server envs, by ``openenv-gym serve`` name.
SERVER_ENVS: Final[dict[str, ServerEnvSpec]] = {
    spec.name: spec
    for spec in (
        ServerEnvSpec(
            name="gymnasium",
            help="serve any Gymnasium env id over OpenEnv",
            description="Serve gymnasium.make(ENV_ID) over the OpenEnv protocol, one env "
            "instance per\nWebSocket session. Supported spaces: Box, Discrete, MultiDiscrete, "
            "MultiBinary.\nAn id another package registers is served as module:Id, which "
            "imports the module\nfirst: openenv-gym serve gymnasium --env-id ale_py:ALE/Pong-v5",
            options=GYMNASIUM_OPTIONS,
            gym_ids=(
                *(
                    GymId(
                        f"{NAMESPACE}/{gym_id}",
                        # gym.make (and make_vec) apply the id's time limit on this side, as
                        # for the raw id; the embedded server runs without one, so a larger
                        # max_episode_steps holds.
                        {"env_id": gym_id, "server_time_limit": False},
                        limits_of=gym_id,
                    )
                    for gym_id in SERVED_GYMNASIUM_IDS
                ),
                GymId(f"{NAMESPACE}/Gymnasium-v0"),
            ),
            # pygame: the classic-control envs render rgb_array frames remotely.
            image_extra="render",
            extra=None,
        ),
        ServerEnvSpec(
            name="atari",
            help="serve an Atari 2600 game (ale-py) with the official OpenEnv Atari schema",
            description="Serve one ALE game over OpenEnv, one emulator per WebSocket session, "
            "with the\nofficial OpenEnv Atari schema (official clients work unchanged). "
            "Defaults follow\nALE/<Game>-v5: frameskip 4, sticky actions 0.25, minimal action "
            "set.\nenvpool's preprocessing options (--stack-num ... --use-inter-area-resize): "
            "any one given\nturns the preprocessing on, the unset ones taking envpool's "
            "default [in brackets].\nThey set the server's own frames; each client session "
            "may still choose its own\n(gym.make('openenv/Atari-v0', base_url=..., "
            "stack_num=4): the reset key 'preprocessing').",
            options=ATARI_OPTIONS,
            gym_ids=(GymId(f"{NAMESPACE}/Atari-v0"),),
            image_extra="atari",
            extra="atari",
        ),
        ServerEnvSpec(
            name="chess",
            help="serve chess (python-chess) with the official OpenEnv chess schema",
            description="Serve chess over OpenEnv against a built-in opponent (random, "
            "material = 2-ply\nmaterial search, uci = an engine on PATH), one game per "
            "WebSocket session, with\nthe official OpenEnv chess schema.",
            options=CHESS_OPTIONS,
            gym_ids=(GymId(f"{NAMESPACE}/Chess-v0"),),
            image_extra="chess",
            extra="chess",
        ),
    )
}

__all__ = [
    "NAMESPACE",
    "SERVED_GYMNASIUM_IDS",
    "SERVER_ENVS",
    "GymId",
    "ServerEnvSpec",
    "ServerImage",
]
