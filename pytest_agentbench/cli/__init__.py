"""The ``agentbench`` command."""
