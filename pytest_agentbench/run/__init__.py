"""The engine: per-process run state, executing and grading cases, controls, ledgers."""
