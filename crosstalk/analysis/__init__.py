"""Reading runs: ingest and its per-run cache, collection into tables, comparison with
references, the report and the figure cache.
"""
