"""Learning libraries on top of the vector env: :mod:`.sb3` (a native SB3 ``VecEnv``) and
:mod:`.rllib` (RLlib's new API stack). Each imports its library only when used."""
