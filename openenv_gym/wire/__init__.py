"""What travels between client and server.

* :mod:`.messages`: the OpenEnv JSON messages (both sides; one parse).
* :mod:`.binary`: the ``openenv-gym.binary.v1`` frames (observation arrays as raw bytes).
* :mod:`.batch`: the ``openenv-gym.batch.v1`` frames (K sessions on one connection).
* :mod:`.shared_memory`: big observation batches in shared memory on one machine.
"""
