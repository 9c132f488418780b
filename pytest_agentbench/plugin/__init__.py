"""pytest integration: hooks, options, fixtures, collection items, snapshots."""
