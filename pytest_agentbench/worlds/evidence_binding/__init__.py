"""The ``evidence-binding`` world kind: the C08 v2 evidence-completeness lineages."""
