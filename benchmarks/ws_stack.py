"""``python -m benchmarks.ws_stack``: round trips/s of WebSocket stacks on loopback.

See :mod:`openenv_gym.bench.ws_stack`.
"""

from openenv_gym.bench.ws_stack import main

if __name__ == "__main__":
    main()
