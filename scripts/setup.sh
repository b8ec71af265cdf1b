#!/usr/bin/env bash
# Set up openenv-gym in ./.venv (Python 3.11+), idempotent.
#
#   bash scripts/setup.sh            # the package and its client dependencies
#   bash scripts/setup.sh dev        # + test tools, SB3 and the official openenv test peer
#   bash scripts/setup.sh atari,sb3  # any extras from pyproject.toml, comma-separated
#   bash scripts/setup.sh gym-latest # ./.venv-gym-latest: the test extra (everything but Ray,
#                                    # whose [rllib] pins gymnasium) with the newest Gymnasium
#                                    # pyproject.toml allows, the one a plain pip install gets
#
# torch is installed first, pinned to the 2.13.0 CPU build, whenever an extra pulls in
# stable-baselines3: a bare `torch` would resolve to several GB of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${1:-}"
python="${PYTHON:-python3}"
venv=".venv"
if [ "$extras" = "gym-latest" ]; then
    venv=".venv-gym-latest"
    extras="test"
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: Python 3.11 or newer is needed; $python is $("$python" --version 2>&1)." >&2
    echo "setup.sh: set PYTHON=/path/to/python3.11 and run again." >&2
    exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "setup.sh: creating $venv with $("$python" --version 2>&1)"
    "$python" -m venv "$venv"
fi
# pip's own lines (Collecting ..., Installing collected packages ...) are the progress of a
# `dev` install that takes minutes; no --quiet. No progress bars: CI logs keep every line.
pip=("$venv/bin/python" -m pip install --progress-bar off --disable-pip-version-check)

# The first release of OpenEnv, openenv-core==0.1.1 (HTTP only), for the tests of servers built
# on it (tests/third_party_servers/): a venv of its own, beside .venv, since it and the official
# openenv package both install an `openenv_core` module.
core01=".venv-openenv-core-0.1"
first_release_venv() {
    case ",$extras," in
        *,dev,*|*,test,*) ;;
        *) return 0 ;;
    esac
    if ! "$core01/bin/python" -c 'import openenv_core.env_server' 2>/dev/null; then
        echo "setup.sh: creating $core01 (openenv-core==0.1.1, the first OpenEnv release)"
        "$python" -m venv "$core01"
        "$core01/bin/python" -m pip install --quiet --disable-pip-version-check openenv-core==0.1.1
    fi
}

# A second run with the same extras and the same pyproject.toml has nothing to install (CI runs
# `setup.sh dev` twice: before building the images and in README command 2): the stamp says so.
# gym-latest always asks pip (a newer Gymnasium may have come out).
stamp="$venv/.openenv-gym-setup"
wanted="$extras $("$python" -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
if [ "$venv" = ".venv" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] \
    && "$venv/bin/python" -c 'import openenv_gym' 2>/dev/null; then
    echo "setup.sh: $venv already has openenv-gym (${extras:-no extras}) for this pyproject.toml"
    first_release_venv
    echo "setup.sh: ready ($venv/bin/python)"
    exit 0
fi
rm -f "$stamp"

case ",$extras," in
    *,dev,*|*,test,*|*,sb3,*)
        if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
            echo "setup.sh: installing torch==2.13.0 (CPU build)"
            "${pip[@]}" torch==2.13.0
        fi
        ;;
esac

target="."
if [ -n "$extras" ]; then
    target=".[$extras]"
fi
echo "setup.sh: installing openenv-gym ($target) in editable mode"
"${pip[@]}" -e "$target"
if [ "$venv" = ".venv-gym-latest" ]; then
    # The newest Gymnasium the package allows (an existing venv may hold an older one).
    "${pip[@]}" --upgrade --upgrade-strategy only-if-needed "$(grep -o '"gymnasium[^"]*"' pyproject.toml | head -1 | tr -d '"')"
    echo "setup.sh: gymnasium $("$venv/bin/python" -c 'import gymnasium; print(gymnasium.__version__)')"
fi
first_release_venv
echo "$wanted" >"$stamp"
echo "setup.sh: ready ($venv/bin/python)"
