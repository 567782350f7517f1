"""Scoring: metrics registry, answer extraction, aggregation and statistics."""
