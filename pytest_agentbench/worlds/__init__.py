"""Built-in world kinds, each registered through the ``pytest_agentbench.worlds`` entry point."""
