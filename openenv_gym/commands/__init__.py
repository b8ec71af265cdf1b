"""The ``openenv-gym`` commands beyond ``serve``, one module each.

They are wired up in :data:`openenv_gym.cli.COMMANDS`.
"""
