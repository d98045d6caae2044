"""The runtime: the agent loop, durable runs, event fan-out and following."""
