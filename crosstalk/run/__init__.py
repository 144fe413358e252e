"""Running experiments: ``crosstalk run`` (runner), its ReFrame session and supervision, resume,
a run's status and locks, leftover processes, and the claims' second stage.
"""
