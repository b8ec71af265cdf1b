"""Finding an MCP tool environment's tools: MCP ``tools/list`` over HTTP, else a
``ListToolsAction`` step over WebSocket.

Official OpenEnv servers (``create_app``) answer JSON-RPC at ``POST {base_url}/mcp``; its
``tools/list`` gives each tool's input and output schema and runs on a throwaway env
instance, so no session slot stays taken. A server without that route is asked with
``{"type": "step", "data": {"type": "list_tools"}}`` on a short-lived session of its own
(its answer, OpenEnv's ``ListToolsObservation``, has no output schemas).

See :mod:`openenv_gym.spaces.tools` for the spaces built from the list.

Example:
    >>> tools = fetch_tools("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> [tool.name for tool in tools]  # doctest: +SKIP
    ['echo_message', 'echo_with_length']
"""

from __future__ import annotations

from typing import Any, Final

from openenv_gym.client import (
    DEFAULT_CONNECT_TIMEOUT,
    ConnectOptions,
    SyncSession,
    auth_headers,
    is_loopback_url,
    resolve_token,
)
from openenv_gym.client.http import auth_error
from openenv_gym.errors import ServerConnectionError, ServerReplyError
from openenv_gym.spaces.tool_list import LIST_TOOLS, ToolSpec, parse_tool_list
from openenv_gym.wire.messages import step_message, ws_to_http_url

#: The official server's JSON-RPC route for MCP.
MCP_PATH: Final = "/mcp"


def fetch_tools(
    base_url: str,
    *,
    timeout: float = DEFAULT_CONNECT_TIMEOUT,
    token: str | None = None,
) -> tuple[ToolSpec, ...] | None:
    """The server's tools, or ``None`` when it lists none (not an MCP tool env).

    Raises:
        ServerConnectionError: The server cannot be reached.
        AuthenticationError: The server refused the token.
    """
    raw = _tools_over_http(base_url, timeout=timeout, token=token)
    if raw is None:
        raw = _tools_over_websocket(base_url, timeout=timeout, token=token)
    if not raw:
        return None
    return parse_tool_list(raw)


def _tools_over_http(base_url: str, *, timeout: float, token: str | None) -> list[Any] | None:
    """``tools/list`` at ``POST /mcp``; ``None`` if the route or method is not there."""
    import httpx  # here: importing it (and the CLI packages it loads) costs 50-100 ms

    base = ws_to_http_url(base_url).rstrip("/")
    url = base + MCP_PATH
    body = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
    try:
        with httpx.Client(timeout=timeout, trust_env=not is_loopback_url(base)) as client:
            response = client.post(url, json=body, headers=auth_headers(resolve_token(token)))
    except (httpx.TransportError, httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ServerConnectionError(f"could not reach {url}: {exc}", url=url) from exc
    if response.status_code in (401, 403):
        raise auth_error(url, response.status_code, resolve_token(token))
    if response.status_code != 200:
        return None
    try:
        reply = response.json()
    except ValueError:
        return None
    result = reply.get("result") if isinstance(reply, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    return tools if isinstance(tools, list) else None


def _tools_over_websocket(base_url: str, *, timeout: float, token: str | None) -> list[Any] | None:
    """A ``list_tools`` step on a session of its own; ``None`` if the reply has no tools."""
    options = ConnectOptions(connect_timeout=timeout, token=token, encoding="json")
    session = SyncSession.connect(base_url, options)
    try:
        reply = session.request_observation(step_message({"type": LIST_TOOLS}))
    except ServerReplyError:  # the server refused the action: not an MCP tool env
        return None
    finally:
        session.close()
    tools = reply.observation.get("tools")
    return tools if isinstance(tools, list) else None
