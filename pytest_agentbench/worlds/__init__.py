"""Built-in world kinds; each registers itself through the ``pytest_agentbench.worlds`` entry point."""
