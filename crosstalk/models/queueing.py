"""Casas & Bronevetsky, active probing of switch contention [casas-bronevetsky].

Probe (ImpactB) latencies summarise how much of a switch a workload uses; CompressionB
configurations C_i with known probe latencies and known victim slowdowns form the training set.

- §4.2 Eq 1 (Pollaczek-Khinchine, M/G/1): W = (rho + lambda*mu*Var(S)) / (2(mu - lambda)) + 1/mu,
  rho = lambda/mu, 1/mu = minimum probe latency on an idle switch, Var(S) = variance of idle probe
  latencies, W = mean probe latency while the workload runs. Solved (Eq 3 divided by mu):
  rho = 2(mu W - 1) / (2 mu W - 1 + mu^2 Var(S)).
- §4.1 look-up tables: pick the C_i whose probe latencies resemble those under aggressor B
  (AverageLT: closest mean; AverageStDevLT: longest overlap of [mu-sigma, mu+sigma];
  PDFLT: largest integral of f_B * f_Ci) and predict victim A's slowdown as A's measured
  slowdown under that C_i. (§4.1.1 says "the slowdown that application B suffers", a slip: the
  prediction is for A, as in §5.2.)
- §5.2 queue model: slowdown of A with B = p_A(U_B), p_A mapping CompressionB utilisation to A's
  slowdown (Fig 12), U_B = rho of B's probe latencies; evaluated, as the text says, at "the
  configuration of CompressionB that utilizes the same fraction of the switch queue" (nearest rho).
- §5.3: errors are |measured - predicted| slowdowns in percentage points over all pairings (Fig 14).
"""
import numpy as np
import pandas as pd

from crosstalk.models import modelled

SOURCE = "Casas & Bronevetsky §4.2 Eq 1-3"

#: §3.2 / §4.3: the 40 CompressionB configurations (partners P, sleep cycles B, messages M) of the
#: default training set, 18 nodes x 2 processes per switch, 40 KB messages.
PAPER_TRAINING_SET = [(p, b, m) for p in (1, 4, 7, 14, 17) for b in (2.5e4, 2.5e5, 2.5e6, 2.5e7) for m in (1, 10)]


def mean_latency(rho, t_min, var_s=0.0):
    """Eq 1: M/G/1 mean time in the switch W for utilisation rho (service time t_min = 1/mu)."""
    if not 0 <= rho < 1:
        raise ValueError(f"rho must be in [0, 1), got {rho}")
    mu = 1.0 / t_min
    lam = rho * mu
    return (rho + lam * mu * var_s) / (2 * (mu - lam)) + 1.0 / mu


def utilisation(w, t_min, var_s=0.0):
    """Eq 3 / mu: rho = 2(mu W - 1) / (2 mu W - 1 + mu^2 Var(S)); W, t_min in the same unit.

    Returned as computed: rho < 0 (W below t_min) or rho >= 1 mean the M/G/1 picture does not fit.
    """
    if t_min <= 0:
        raise ValueError(f"t_min must be > 0, got {t_min}")
    if var_s < 0:
        raise ValueError(f"Var(S) must be >= 0, got {var_s}")
    mu = 1.0 / t_min
    return 2 * (mu * w - 1) / (2 * mu * w - 1 + mu * mu * var_s)


def arrival_rate_eq3(w, t_min, var_s=0.0):
    """Eq 3 exactly as printed: lambda = (2 - 2W mu) / (-2W + 2/mu - mu Var(S) - 1/mu)."""
    mu = 1.0 / t_min
    return (2 - 2 * w * mu) / (-2 * w + 2 / mu - mu * var_s - 1 / mu)


def idle_parameters(idle_latencies):
    """(t_min = 1/mu, Var(S)) from probe latencies on an idle switch (§4.2)."""
    x = _samples(idle_latencies, "idle latencies")
    return float(x.min()), float(x.var(ddof=1)) if x.size > 1 else 0.0


def switch_utilisation(latencies, idle_latencies):
    """The switch utilisation metric rho of a workload, as a modelled record."""
    t_min, var_s = idle_parameters(idle_latencies)
    w = float(_samples(latencies, "latencies").mean())
    return modelled("switch_utilisation", utilisation(w, t_min, var_s), "fraction", SOURCE,
                    w=w, t_min=t_min, var_s=var_s)


def _samples(values, what):
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: need finite samples, got {x.size}")
    return x


# -- selection of the CompressionB configuration that stands in for aggressor B --------------

def select_average(target, training):
    """AverageLT (§4.1.1): the C_i whose mean probe latency is closest to B's."""
    mu_b = _samples(target, "target").mean()
    return min(training, key=lambda c: abs(_samples(training[c], c).mean() - mu_b))


def interval_overlap(a, b):
    """Length of the intersection of intervals a = (lo, hi) and b."""
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def select_average_stdev(target, training):
    """AverageStDevLT (§4.1.2): maximise |[mu_B-s_B, mu_B+s_B] ∩ [mu_C-s_C, mu_C+s_C]|.

    sigma is the population standard deviation (ddof 0). Ties (e.g. no interval overlaps) go to
    the closest mean, as AverageLT would choose.
    """
    x = _samples(target, "target")
    ib = (x.mean() - x.std(), x.mean() + x.std())

    def score(c):
        y = _samples(training[c], c)
        return (interval_overlap(ib, (y.mean() - y.std(), y.mean() + y.std())), -abs(y.mean() - x.mean()))
    return max(training, key=score)


def pdf_overlap(a, b, edges):
    """∫ f_a f_b with f the histogram densities of the samples on the given bin edges (§4.1.3)."""
    fa, _ = np.histogram(_samples(a, "a"), edges, density=True)
    fb, _ = np.histogram(_samples(b, "b"), edges, density=True)
    return float(np.sum(fa * fb * np.diff(edges)))


def select_pdf(target, training, bins=50):
    """PDFLT (§4.1.3): the C_i maximising ∫ f_B f_Ci; one set of bin edges for all C_i."""
    everything = np.concatenate([_samples(target, "target")] + [_samples(v, c) for c, v in training.items()])
    edges = np.histogram_bin_edges(everything, bins=bins)
    return max(training, key=lambda c: pdf_overlap(target, training[c], edges))


def select_queue(target, training, idle_latencies):
    """Queue model (§5.2): the C_i whose utilisation rho is closest to rho_B."""
    t_min, var_s = idle_parameters(idle_latencies)
    rho_b = utilisation(_samples(target, "target").mean(), t_min, var_s)
    return min(training, key=lambda c: abs(utilisation(_samples(training[c], c).mean(), t_min, var_s) - rho_b))


PREDICTORS = {"AverageLT": select_average, "AverageStDevLT": select_average_stdev,
              "PDFLT": select_pdf, "QueueModel": select_queue}


def predict_slowdowns(predictor, impacts, training, compression_slowdowns, idle_latencies=None):
    """Predicted slowdown (%) of every victim A with every aggressor B: A's slowdown under C*(B).

    ``impacts``: {app: probe latencies while app runs}; ``training``: {C_i: probe latencies while
    C_i runs}; ``compression_slowdowns``: {app: {C_i: measured slowdown %}} (Eq 4).
    Returns a DataFrame (rows victim, columns aggressor) like Table 1.
    """
    if predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {sorted(PREDICTORS)}, got {predictor!r}")
    select = PREDICTORS[predictor]
    extra = (idle_latencies,) if predictor == "QueueModel" else ()
    if predictor == "QueueModel" and idle_latencies is None:
        raise ValueError("the queue model needs idle-switch probe latencies")
    chosen = {b: select(impacts[b], training, *extra) for b in impacts}
    apps = list(compression_slowdowns)
    return pd.DataFrame({b: [compression_slowdowns[a][chosen[b]] for a in apps] for b in impacts},
                        index=pd.Index(apps, name="victim"))


def prediction_errors(predicted, measured):
    """|measured - predicted| in percentage points per pairing, and the Fig 14 summary.

    Returns (errors DataFrame aligned on victims x aggressors, summary dict with n, mean, median,
    q1, q3, max, share_below_10, share_above_20 (fractions)).
    """
    predicted = predicted.loc[measured.index, measured.columns]
    err = (measured.astype(float) - predicted.astype(float)).abs()
    e = err.to_numpy().ravel()
    if np.isnan(e).any():
        raise ValueError("predicted and measured tables do not cover the same pairings")
    summary = {"n": int(e.size), "mean": float(e.mean()), "median": float(np.median(e)),
               "q1": float(np.percentile(e, 25)), "q3": float(np.percentile(e, 75)),
               "max": float(e.max()), "share_below_10": float(np.mean(e < 10)),
               "share_above_20": float(np.mean(e > 20))}
    return err, summary
