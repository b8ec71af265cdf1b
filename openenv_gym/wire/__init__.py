"""What travels between client and server.

* :mod:`.messages`: the OpenEnv JSON messages (both sides; one parse).
* :mod:`.binary`: the ``openenv-gym.binary.v1`` frames (observation arrays as raw bytes).
* :mod:`.wsframes`: writing WebSocket frames on the hot path.
"""
