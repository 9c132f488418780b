"""The ``lettings.maintenance`` domain pack."""
