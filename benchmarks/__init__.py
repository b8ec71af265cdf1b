"""Throughput and latency measurements; run as scripts, never as timed tests."""
