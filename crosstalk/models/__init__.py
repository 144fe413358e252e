"""The papers' models as pure functions (numpy/scipy), one module per paper.

Any value a model derives rather than measures is returned through :func:`modelled`, so reports
can say which numbers are modelled and by which equation.
"""


def modelled(metric, value, unit, source, **params):
    """One tidy record for a derived (not measured) value; ``source`` cites paper + equation."""
    return {"metric": metric, "value": float(value), "unit": unit, "stat": "model",
            "modelled": True, "source": source, **params}
