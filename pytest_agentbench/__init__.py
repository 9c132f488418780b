"""pytest-agentbench: agent benchmarks as ordinary pytest test collections."""

__version__ = "0.1.0"
