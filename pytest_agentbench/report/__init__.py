"""Reporting: aggregation on the controller, terminal, JUnit XML and the JSON run report."""
