"""The domain packs this distribution ships; each registers through ``pyproject.toml``."""
