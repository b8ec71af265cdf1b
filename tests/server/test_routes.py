"""The plain HTTP GET endpoints of our server, over real HTTP on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from openenv_gym.server import EnvironmentMetadata, State


def get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=10)


def test_health(probe_url: str) -> None:
    response = get(probe_url + "/health")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": "healthy"}


def test_query_string_is_ignored(probe_url: str) -> None:
    assert get(probe_url + "/health?verbose=1").json() == {"status": "healthy"}


def test_schema_is_the_models_json_schemas(probe_url: str, wire: Any) -> None:
    response = get(probe_url + "/schema")
    assert response.status_code == 200
    schema = response.json()
    assert schema == {
        "action": wire.probe_action.model_json_schema(),
        "observation": wire.probe_observation.model_json_schema(),
        "state": State.model_json_schema(),
        "reset_observation": wire.probe_observation.model_json_schema(),
    }
    assert schema["action"]["properties"]["value"]["maximum"] == 100
    assert schema["action"]["additionalProperties"] is False


def test_metadata_defaults_from_the_class(probe_url: str, registry: Any) -> None:
    response = get(probe_url + "/metadata")
    assert response.status_code == 200
    assert response.json() == {
        "name": "ProbeEnvironment",
        "description": "Echoes the action value; fails on request.",
        "readme_content": None,
        "version": "1.0.0",
        "author": None,
        "documentation_url": None,
    }
    assert all(env.closed for env in registry.created)  # the throwaway env was closed


def test_metadata_given_to_the_server(start_probe: Any) -> None:
    metadata = EnvironmentMetadata(name="probe", description="a probe", author="tests")
    url, registry, _ = start_probe(metadata=metadata)
    assert get(url + "/metadata").json() == metadata.model_dump()
    assert registry.created == []  # no env needed


def test_state_of_a_fresh_env(probe_url: str, registry: Any) -> None:
    response = get(probe_url + "/state")
    assert response.status_code == 200
    assert response.json() == {"episode_id": None, "step_count": 0}
    assert len(registry.created) == 1
    assert registry.created[0].closed


def test_state_when_the_factory_fails_is_a_500(start_probe: Any) -> None:
    url, registry, _ = start_probe()
    registry.fail = True
    response = get(url + "/state")
    assert response.status_code == 500
    assert "no environment today" in response.json()["detail"]
    registry.fail = False
    assert get(url + "/health").status_code == 200


@pytest.mark.parametrize("path", ["/", "/nope", "/reset", "/step", "/health/extra", "/ws/x"])
def test_unknown_paths_are_404_json(probe_url: str, path: str) -> None:
    response = get(probe_url + path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"detail": "Not Found"}


def test_ws_without_upgrade_is_426(probe_url: str) -> None:
    response = get(probe_url + "/ws")
    assert response.status_code == 426
    assert "WebSocket" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/", "/other", "/health"])
def test_websocket_upgrade_to_other_paths_is_404(probe_url: str, wire: Any, path: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        wire.open(probe_url, path=path)
    assert refused.value.response.status_code == 404


def test_post_is_served_beside_sessions(probe_url: str, wire: Any) -> None:
    # The official HTTP API's POST /reset, on the WebSocket port (server/http_requests.py).
    assert httpx.post(probe_url + "/reset", json={}, timeout=10).status_code == 200
    assert get(probe_url + "/health").status_code == 200
    with wire.open(probe_url) as ws:
        wire.assert_session_works(ws)
