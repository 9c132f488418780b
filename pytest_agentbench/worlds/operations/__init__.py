"""The ``operations`` world kind: long-running business operations on a simulated clock.

The engine (this package's top-level modules) knows no domain; a domain pack
under ``domains/`` supplies event types and their reducers, actions and their
validators and executors, invariants and the domain parts of the dimensions.
"""
