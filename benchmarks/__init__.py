"""Throughput and latency measurements; run as scripts, never as timed tests.

``python -m benchmarks.run`` (or ``openenv-gym bench`` from a clone) runs the suite.
"""

#: Marks this package as openenv-gym's suite (``benchmarks`` is a common package name).
SUITE = "openenv-gym"
