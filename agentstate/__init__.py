"""agentstate: per-repository state for coding agents."""

__version__ = "0.1.0"
