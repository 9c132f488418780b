"""Running the adapter in its own process (``--agentbench-isolate``).

The modules divide along the process boundary. :mod:`.protocol` is the wire
format and is imported by both sides; :mod:`.child` is what runs in the
adapter's process and imports nothing else of the plugin; :mod:`.channel`,
:mod:`.host` and :mod:`.proxy` run in the harness. This package's
``__init__`` imports nothing, so starting the child costs no harness imports.
"""
