"""The ``authority`` world kind: identity, delegated authority, time and audit provenance."""
