"""The contract between the core and a world kind."""
