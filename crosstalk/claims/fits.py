"""Claims judged on a fitted model rather than on one effect per sample: the model's estimate and
its interval, from the platform's samples. A spec names a fit from :data:`FITS` (never a Python
path: a spec is data).

Each fit returns ``(estimate, ci_low, ci_high, n, least)``, the interval None when the n samples
are fewer than ``least``, and raises :class:`~crosstalk.claims.operands.Missing` when it has nothing to fit.
"""
import pandas as pd

from crosstalk.claims.operands import JOB_KEY, Missing, distinct_params, measured


def linear_loss(test, table, experiment, select, units):
    """Least-squares ``y = a + b x`` over the cases' jobs (x and y of the same job);
    the estimate is ``-b``, what y loses per unit of x (Groves 2017 Fig 2.21b: memory bytes lost per
    injected byte), with its Student-t interval. Where ``x_zero`` matches a case (its parameters),
    x is 0 there (no injection: nothing injected)."""
    from crosstalk.models.throttling import fit_bandwidth_loss
    # One point per job: y's rounds as their median (rounds of one job are not independent
    # points of a fit), x the job's own (the injected rate over all of its rounds).
    key = [*JOB_KEY, "params"]
    y_rows, chosen = measured(test["y"], table, experiment, select, units)
    y = y_rows.groupby(key, dropna=False)["value"].median()
    try:
        x_rows, _ = measured(test["x"], table, experiment, select, None)
        x = x_rows.groupby(key, dropna=False)["value"].median()
    except Missing:
        x = pd.Series(dtype=float)
    zero = {str(k): str(v) for k, v in test.get("x_zero", {}).items()}
    at_zero = {text for text, p in distinct_params(y_rows).items()
               if zero and all(str(p.get(k)) == v for k, v in zero.items())}
    x = x.reindex(y.index)
    x[y.index.get_level_values("params").isin(at_zero)] = 0.0
    pairs = pd.DataFrame({"x": x, "y": y}).dropna()
    if len(pairs) < 3 or pairs["x"].nunique() < 2:
        raise Missing(experiment, chosen, f"{test['y']['metric']} against 2 or more {test['x']['metric']} levels")
    fit = fit_bandwidth_loss(pairs["x"].to_numpy(), pairs["y"].to_numpy(), confidence=table.confidence)
    least = 4                      # a t interval on n - 2 = 2 degrees of freedom, at the least
    interval = (fit["ci_low"], fit["ci_high"]) if len(pairs) >= least else (None, None)
    return fit["value"], *interval, len(pairs), least


def queue_model_error(test, table, experiment, select, units):
    """Mean absolute error (percentage points) of the M/G/1 queue model's predicted co-run
    slowdowns (Casas & Bronevetsky Figs 13, 14, 18), over every pairing of every partition, with a
    bootstrap interval of the mean (BCa; 5 pairings or more). Reuses the figure's assembly of
    probe samples and co-run times (crosstalk.figures.casas.predictions)."""
    from crosstalk.figures import ordered_targets
    from crosstalk.figures.casas import cases, predictions
    wide = cases(table.full, None)
    errors, why = [], []
    for target in ordered_targets(wide) if not wide.empty else []:
        by_model, _, missing = predictions(wide, target)
        if missing:
            why.append(missing)
            continue
        errors += list(by_model["QueueModel"].to_numpy(dtype=float).ravel())
    if not errors:
        raise Missing(experiment, select or {}, "queue-model predictions",
                      f"no queue-model predictions: {why[0]}" if why else None)
    units.add("pp (modelled predictions)")
    # here: it imports scipy, about 1 s for every analysis process
    from crosstalk.models.stats import MEAN_INTERVAL_LEAST, mean_interval
    return (*mean_interval(errors, table.confidence), len(errors), MEAN_INTERVAL_LEAST)


#: Fits a claim may name (``test: {kind: fit, model: <name>}``).
FITS = {"linear-loss": linear_loss, "queue-model-error": queue_model_error}
