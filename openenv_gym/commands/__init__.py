"""``openenv-gym`` subcommands other than ``serve``, one module each."""
