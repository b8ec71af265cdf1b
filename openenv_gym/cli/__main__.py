"""``python -m openenv_gym.cli``: the ``openenv-gym`` command."""

import sys

from openenv_gym.cli.program import main

sys.exit(main())
