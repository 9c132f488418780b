"""Metrics, release gates, small-sample statistics, paired comparison and trials."""
