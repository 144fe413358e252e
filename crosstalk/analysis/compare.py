"""``crosstalk compare BASELINE CANDIDATE``: flag statistically significant regressions per metric.

BASELINE and CANDIDATE are each a run directory, a system's results directory
(``results/<system>``: all its runs) or a collected table (``table.parquet``: the user's runs in it,
not the shipped examples). Values of the same system and host class (different hardware is never a
regression), test case (parameters without ``repeat``), partition and metric are compared with a one-sided
Mann-Whitney U test (``crosstalk.models.stats.compare``): a regression needs p < alpha towards
"worse" (from the spec's ``better``) AND a median change of at least ``min_effect``.
Exit status 1 if any metric regressed; ``--junit`` writes one JUnit test case per metric. A broken
run in a results/<system> directory is one line on stderr and left out, the rest compared as if it
were absent (the exit status too); a broken run given as BASELINE or CANDIDATE is exit status 2.
"""
import json
from pathlib import Path
from xml.etree import ElementTree as ET

from crosstalk.analysis import format_number, tell_skipped
from crosstalk.argtypes import number
from crosstalk.errors import CrosstalkError, InputError

# pandas, scipy (crosstalk.models.stats) and the modules that import them are imported where they are
# used: a refused argument or a path that is no run is one line at once, not after about 2 s of imports.

KEY = ["system", "host_class", "experiment", "test", "partition", "params", "metric"]
#: Columns compare reads from a table.
NEEDED = [*KEY, "host_label", "value", "unit"]


def _read_table(path):
    import pandas as pd
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError) as err:        # pyarrow's ArrowInvalid is a ValueError
        raise InputError(path, None, f"not a parquet table ({str(err).splitlines()[0][:120]})") from None
    missing = [c for c in NEEDED if c not in table]
    if missing:
        raise InputError(path, f"column {missing[0]!r}", "missing (not a table written by crosstalk report)")
    return table[table.origin != "example"] if "origin" in table else table


def load_values(source, errors=None):
    """The tidy performance table of a run dir, a system dir or a parquet file. Broken runs of a
    system dir are left out: their one-line errors go to ``errors`` (a list), else to stderr."""
    path = Path(source)
    if path.suffix == ".parquet" and path.is_file():
        return _read_table(path)
    if (path / "report.json").exists():
        from crosstalk.analysis.ingest import PERF_COLUMNS, load_run
        perf, _ = load_run(path)
        import pandas as pd  # after the run is read: a broken run is one line at once
        return pd.DataFrame(perf, columns=PERF_COLUMNS)
    if (path / "runs").is_dir():
        from crosstalk.analysis.collect import collect
        perf, _, broken = collect(path.parent, [path.name])
        if errors is not None:
            errors += broken
        else:
            tell_skipped(broken)
        return perf
    raise InputError(source, None, "not a run directory, a results/<system> directory or a .parquet table")


def _without_repeat(params):
    return json.dumps({k: v for k, v in json.loads(params).items() if k != "repeat"}, sort_keys=True)


def compare_tables(baseline, candidate, alpha=0.05, min_effect=0.05):
    from crosstalk.analysis.ingest import reported
    from crosstalk.models import stats
    from crosstalk.specs import better_direction
    better_of = better_direction()
    frames = []
    for df in (baseline, candidate):
        df = reported(df[df["value"].notna()])
        df["params"] = df["params"].map(_without_repeat)
        frames.append(df)
    base, cand = frames
    results = []
    for key, b in base.groupby(KEY):
        c = cand
        for col, val in zip(KEY, key):
            c = c[c[col] == val]
        if c.empty:
            continue
        system, host_class, experiment, test, partition, params, metric = key
        verdict = stats.compare(b["value"].to_numpy(), c["value"].to_numpy(),
                                better=better_of(experiment, metric), alpha=alpha,
                                min_effect=min_effect)
        results.append({"system": system, "host_class": host_class, "experiment": experiment,
                        "test": test, "partition": partition,
                        "params": params, "metric": metric, "unit": b["unit"].iloc[0],
                        "method": verdict.pop("test"), **verdict})
    return results


def write_junit(results, path):
    suite = ET.Element("testsuite", name="crosstalk-compare", tests=str(len(results)),
                       failures=str(sum(r["verdict"] == "regression" for r in results)),
                       skipped=str(sum(r["verdict"] == "insufficient data" for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"{r['experiment']}.{r['test']}",
                             name=f"{r['partition']} {r['params']} {r['metric']}")
        detail = (f"median {r['median_baseline']:.4g} -> {r['median_candidate']:.4g} {r['unit']} "
                  f"(effect {r['effect']:+.1%}, {r['method']} p={r['p_value']:.3g}, alpha {r['alpha']}, "
                  f"min effect {r['min_effect']:.0%}, n={r['n_baseline']}/{r['n_candidate']})")
        if r["verdict"] == "regression":
            ET.SubElement(case, "failure", message=f"regression: {detail}")
        elif r["verdict"] == "insufficient data":
            ET.SubElement(case, "skipped", message=r.get("reason", "insufficient data"))
        else:
            ET.SubElement(case, "system-out").text = f"{r['verdict']}: {detail}"
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def host_classes(table):
    """``{host class id: 'id (label)'}`` of a table's values."""
    return {hc: f"{hc} ({label})" for hc, label in zip(table["host_class"], table["host_label"])}


def _cmd_compare(args):
    if args.junit and (args.junit.is_dir() or not args.junit.parent.is_dir()):
        raise InputError(args.junit, "--junit", "is a directory" if args.junit.is_dir() else
                         f"no such directory {str(args.junit.parent)!r} to write it in")
    broken = []
    baseline, candidate = load_values(args.baseline, broken), load_values(args.candidate, broken)
    tell_skipped(broken)
    base_hc, cand_hc = host_classes(baseline), host_classes(candidate)
    if base_hc and cand_hc and not base_hc.keys() & cand_hc.keys():
        raise CrosstalkError(f"compare: baseline host class {', '.join(sorted(base_hc.values()))} and "
                             f"candidate host class {', '.join(sorted(cand_hc.values()))} differ: "
                             "different hardware cannot be compared as a regression")
    results = compare_tables(baseline, candidate, args.alpha, args.min_effect)
    if not results:
        raise InputError(args.candidate, None, "no test case and metric in common with the baseline")
    print(f"{'verdict':<18} {'effect':>8} {'p':>8}  {'baseline':>10} {'candidate':>10}  metric / case")
    for r in sorted(results, key=lambda r: (r["verdict"] != "regression", r["test"])):
        p = "-" if r["p_value"] != r["p_value"] else f"{r['p_value']:.3g}"
        print(f"{r['verdict']:<18} {r['effect']:>+8.1%} {p:>8}  {format_number(r['median_baseline']):>10} "
              f"{format_number(r['median_candidate']):>10}  {r['metric']} [{r['unit']}] {r['test']} "
              f"{r['partition']} {r['params']}")
    print(f"test: one-sided Mann-Whitney U, alpha {args.alpha}, minimum effect {args.min_effect:.0%}")
    if args.junit:
        write_junit(results, args.junit)
    return 1 if any(r["verdict"] == "regression" for r in results) else 0


def register(subparsers):
    p = subparsers.add_parser("compare", help="flag significant regressions of CANDIDATE against BASELINE")
    p.add_argument("baseline", help="run dir, results/<system> dir or table.parquet")
    p.add_argument("candidate", help="run dir, results/<system> dir or table.parquet")
    p.add_argument("--alpha", type=number(above=0, below=1), default=0.05,
                   help="significance level (default 0.05)")
    p.add_argument("--min-effect", type=number(minimum=0), default=0.05,
                   help="smallest relative median change that counts (default 0.05)")
    p.add_argument("--junit", type=Path, help="write JUnit XML here")
    p.set_defaults(func=_cmd_compare)
