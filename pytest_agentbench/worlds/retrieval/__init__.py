"""The ``retrieval`` world kind: typed claims with exact evidence citations.

Reads and writes fixtures of the original's ``agentic-retrieval@1`` format.
"""
