"""The dataset card (``README.md``) written next to a recording.

Its YAML header holds the Hub's tags. It declares no ``configs``: the chunk names alone
(``data/train-*.parquet``, the split-in-file-name convention) make the Hub's viewer and
``datasets.load_dataset(dir_or_repo)`` take exactly the chunks, and a ``configs`` entry
would make ``datasets`` cache every local directory of the same name under one key (a
relative pattern), so a second recording in ``other/rec`` would load the first one's rows.
The body says what the columns mean, which spaces the env had and how to load the data
(``datasets``, numpy, Minari).

Example:
    >>> card = dataset_card({"metadata": {"env_id": "CartPole-v1"}, "steps": 10, "fields": {}})
    >>> card.splitlines()[0], "data_dir=" in card
    ('---', True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openenv_gym.trajectories.layout import DATA_FILES_PATTERN

__all__ = ["dataset_card"]

_HEADER = """---
tags:
- reinforcement-learning
- offline-rl
- gymnasium
- openenv
- openenv-gym
---
"""

_COLUMNS = """\
| column | meaning |
|---|---|
| `episode_id` | episode, unique within the recording |
| `env_index` | the sub-env of a vector env that played it (0 for a single env) |
| `step` | index of the transition within its episode |
| `observation[.key]` | `s`, the observation the action was taken in |
| `action[.key]` | `a`, the action the env executed (after any exploration noise) |
| `reward` | `r` as the recorder saw it (after shaping, if any) |
| `raw_reward` | the environment's own reward |
| `terminated` | `s'` is terminal: do not bootstrap |
| `truncated` | the episode was cut after this step: bootstrap from `s'` |
| `next_observation[.key]` | `s'` (the final observation on an episode's last step) |
| `info.key` | recorded info fields |
"""

_LOADING = """\
```python
from datasets import load_dataset
dataset = load_dataset("parquet", data_dir="{directory}", split="train")  # or load_dataset(DIR)

from openenv_gym.trajectories import trajectory_arrays, trajectory_spaces
arrays = trajectory_arrays("{directory}")         # numpy, shapes and dtypes restored
observation_space, action_space = trajectory_spaces("{directory}")

from openenv_gym.trajectories import to_minari    # pip install 'openenv-gym[minari]'
minari_dataset = to_minari("{directory}", "openenv/{name}-v0")
```
"""


def dataset_card(summary: Mapping[str, Any], directory: str = "DIR") -> str:
    """The ``README.md`` text for a recording's summary (``metadata.json`` contents)."""
    meta = dict(summary.get("metadata") or {})
    env_id = str(meta.get("env_id") or "an OpenEnv environment")
    name = env_id.split("/")[-1].split("-v")[0] or "env"
    lines = [
        _HEADER,
        f"# Trajectories of {env_id}",
        "",
        "Recorded with [openenv-gym](https://pypi.org/project/openenv-gym/) "
        f"{meta.get('package_version', '')}: one row per transition "
        "`(s, a, r, s', terminated, truncated)`.",
        "",
        f"- steps: {summary.get('steps', 0)}, finished episodes: "
        f"{summary.get('episodes_ended', 0)}, chunks: {summary.get('chunks', 0)} "
        f"(`{DATA_FILES_PATTERN}`)",
    ]
    for key in ("server_url", "seed", "policy", "created"):
        if meta.get(key) is not None:
            lines.append(f"- {key}: `{meta[key]}`")
    for key in ("observation_space", "action_space"):
        if key in summary:
            lines.append(f"- {key}: `{json.dumps(summary[key])}`")
    lines += ["", "## Columns", "", _COLUMNS]
    if any(name.startswith("policy_action") for name in summary.get("fields") or {}):
        lines += [
            "`policy_action[.key]` holds the policy's action before the exploration noise; "
            "`action` is the one the env executed, so replaying `action` reproduces the "
            "episodes.",
            "",
        ]
    fields = summary.get("fields") or {}
    if fields:
        lines += ["| array column | shape | dtype |", "|---|---|---|"]
        lines += [f"| `{k}` | {tuple(v['shape'])} | {v['dtype']} |" for k, v in fields.items()]
        lines.append("")
    lines += ["## Loading", "", _LOADING.format(directory=directory, name=name)]
    if meta.get("experiment"):
        lines += [
            "## Reproducing",
            "",
            "The experiment config is in `experiment.yaml`: "
            f"`openenv-gym record --config experiment.yaml --episodes "
            f"{meta.get('episodes', 'N')} --out NEW_DIR`.",
            "",
        ]
    return "\n".join(lines)
