"""Publish a recording as a Hugging Face dataset repo (chunks, dataset card, metadata).

The dataset card's YAML header points the Hub's viewer and ``load_dataset(repo_id)`` at the
chunks, so the pushed repo loads with ``datasets.load_dataset("USER/REPO", split="train")``.
"""

from __future__ import annotations

import os
from pathlib import Path

from openenv_gym.errors import HubPushError, TrajectoryFormatError
from openenv_gym.extras import optional_imports
from openenv_gym.trajectories.layout import (
    CARD_FILE,
    CONFIG_FILE,
    DATA_FILES_PATTERN,
    METADATA_FILE,
)
from openenv_gym.trajectories.reader import trajectory_files

__all__ = ["push_to_hub"]


def push_to_hub(
    directory: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool | None = None,
    endpoint: str | None = None,
    timeout: float = 10.0,
) -> str:
    """Upload a recording (chunks, ``README.md``, ``metadata.json``, config) to a dataset repo.

    Fails fast (no hang) when offline: ``HF_HUB_OFFLINE`` is honoured, and the endpoint is
    probed with ``timeout`` seconds before anything else.

    Returns:
        The dataset URL.

    Raises:
        HubPushError: Offline, unreachable, not logged in, or the upload failed.
        TrajectoryFormatError: ``directory`` holds no finished chunk.
    """
    import httpx

    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk to push")
    with optional_imports("pushing a recording to the Hub"):
        from huggingface_hub import HfApi, constants
    # The live environment decides (huggingface_hub reads HF_HUB_OFFLINE once, at import).
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        raise HubPushError(
            f"cannot push {repo_id!r}: HF_HUB_OFFLINE is set; unset it on a machine with "
            f"network access, or copy {str(directory)!r} there and push from it"
        )
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    try:
        httpx.head(endpoint, timeout=timeout)
    except httpx.HTTPError as exc:
        raise HubPushError(
            f"cannot push {repo_id!r}: the Hub at {endpoint} is not reachable within "
            f"{timeout}s ({type(exc).__name__}: {exc}); check the network or set "
            "HF_ENDPOINT, then retry"
        ) from exc
    api = HfApi(endpoint=endpoint, token=token)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        api.upload_folder(
            folder_path=str(directory),
            repo_id=repo_id,
            repo_type="dataset",
            allow_patterns=[DATA_FILES_PATTERN, CARD_FILE, METADATA_FILE, CONFIG_FILE],
        )
    except Exception as exc:
        raise HubPushError(
            f"pushing {str(directory)!r} to the dataset repo {repo_id!r} at {endpoint} failed "
            f"({type(exc).__name__}: {exc}); log in with `hf auth login` or pass token=..."
        ) from exc
    return str(url)
