"""``openenv-gym`` commands that live in their own modules (one module per command)."""
