"""Shared ReFrame building blocks for crosstalk experiments (fixtures and mixins)."""
