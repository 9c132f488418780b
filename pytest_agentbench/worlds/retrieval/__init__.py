"""The ``retrieval`` world kind: typed claims with exact evidence citations (agentic-retrieval@1)."""
