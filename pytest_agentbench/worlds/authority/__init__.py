"""The ``authority`` world kind: identity, delegated authority, temporal validity and audit provenance."""
