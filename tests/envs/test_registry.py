"""The server-env registry is the one place: serve, the Gymnasium ids, the images and the
serve help's hint all follow it; and ServerSpec lifts the embedded-server keywords."""

from __future__ import annotations

import importlib
import inspect

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.cli.program import build_parser
from openenv_gym.envs.registry import SERVER_ENVS
from openenv_gym.images.env_images import IMAGES
from openenv_gym.providers import ServerSpec, server_provider
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.providers.spec import SERVER_KEYWORDS, takes_server_keywords


def test_every_server_env_is_a_serve_target_an_image_and_registered_ids() -> None:
    parser = build_parser()
    for name, spec in SERVER_ENVS.items():
        options = spec.options.defaults()
        if name == "gymnasium":
            options["env_id"] = "CartPole-v1"  # required
        args = parser.parse_args(["serve", name, *spec.options.to_argv(options)])
        assert args.target == name
        assert spec.options_of(args) == options
        assert IMAGES[name].tag == spec.image.tag
        assert IMAGES[name].dockerfile == spec.image.dockerfile
        for gym_id in spec.gym_ids:
            registered = gym.spec(gym_id.name)
            assert registered.entry_point == spec.client
            assert registered.kwargs == dict(gym_id.kwargs)
            assert registered.vector_entry_point is not None
    assert set(IMAGES) == set(SERVER_ENVS)


def test_served_ids_take_the_local_ids_limits() -> None:
    assert (
        gym.spec("openenv/CartPole-v1").max_episode_steps
        == gym.spec("CartPole-v1").max_episode_steps
    )
    assert gym.spec("openenv/Gymnasium-v0").max_episode_steps is None


def test_serve_help_names_the_extra_to_install() -> None:
    assert "pip install 'openenv-gym[atari]'" in SERVER_ENVS["atari"].serve_description
    assert SERVER_ENVS["gymnasium"].serve_description == SERVER_ENVS["gymnasium"].description


def test_server_spec_takes_only_its_keywords() -> None:
    kwargs = {"token": "t", "workers": "auto", "unix_socket": True, "encoding": "json"}
    spec = ServerSpec.take(kwargs)
    assert spec == ServerSpec(token="t", workers="auto", unix_socket=True)
    assert kwargs == {"encoding": "json"}
    assert ServerSpec.take({"image": "a"}, image="b").image == "b"  # the caller's value wins


def test_server_spec_reaches_the_child_process() -> None:
    provider = server_provider(
        ["gymnasium", "--env-id", "CartPole-v1"],
        ServerSpec(workers=2, startup_timeout=7.0, unix_socket=True),
    )
    assert isinstance(provider, LocalServerProcess)
    assert provider.serve_args[-2:] == ["--workers", "2"]
    assert provider.startup_timeout == 7.0


@pytest.mark.parametrize("name", sorted(SERVER_ENVS))
def test_client_factories_show_the_server_keywords(name: str) -> None:
    # A vector env asks for workers="auto" and unix_socket=True only when the entry point's
    # signature names them.
    module, _, function = SERVER_ENVS[name].client.partition(":")
    factory = getattr(importlib.import_module(module), function)
    assert set(SERVER_KEYWORDS) <= set(inspect.signature(factory).parameters)


def test_takes_server_keywords_needs_kwargs() -> None:
    def make_env(base_url: str | None = None) -> None:
        return None

    with pytest.raises(TypeError, match="must take \\*\\*kwargs"):
        takes_server_keywords(make_env)


def test_a_spec_is_frozen() -> None:
    with pytest.raises(AttributeError):
        ServerSpec().image = "x"  # type: ignore[misc]
