"""What travels between client and server.

* :mod:`.encoding`: the :class:`~.encoding.Encoding` registry both sides pick from (what
  each encoding's subprotocol is, what it implies, how it reads and writes frames), and
  what ``encoding=`` asks for.
* :mod:`.messages`: the OpenEnv JSON messages (both sides; one parse, one JSON encoder),
  the protocol's paths and our handshake header and size limits.
* :mod:`.binary`: the ``openenv-gym.binary.v1`` frames (observation arrays as raw bytes).
* :mod:`.batch`: the ``openenv-gym.batch.v1`` frames (K sessions on one connection).
* :mod:`.shared_memory`: big observation batches in shared memory on one machine.
* :mod:`.compressed`: frames packed with zstd across a link (agreed in ``batch_open``, or
  by subprotocol for one session), and the bound on what a packed frame may unpack to.
"""
