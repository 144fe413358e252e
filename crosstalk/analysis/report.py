"""The HTML report page of a set of rows (the workflow's pages job calls ``write_report``; ``crosstalk
report`` runs the workflow: crosstalk.analysis.workflow)."""
import datetime as dt
import os
import re
from functools import lru_cache
from pathlib import Path

import jinja2
import pandas as pd

from crosstalk.analysis import format_number
from crosstalk.analysis.ingest import NO_ENVIRON, load_provenance, platform_of, target_of
from crosstalk.analysis.workflow import BENCHMARK_PAGES
from crosstalk.bibliography import bibliography, citation
from crosstalk.errors import InputError
from crosstalk.site.hostclass import from_provenance
from crosstalk.site.systemfacts import topology_of
from crosstalk.specs import all_specs
from crosstalk.vcluster.balance import describe as describe_balance

TEMPLATES = Path(__file__).parent / "templates"


def _reference_text(ref, lo, hi):
    if pd.isna(ref):
        return "none (explore)"
    bounds = f" [{lo:+.0%}, {hi:+.0%}]" if pd.notna(lo) and pd.notna(hi) else ""
    return f"{format_number(ref)}{bounds}"


#: How the report tells the two origins of runs apart.
ORIGIN_TEXT = {"user": "your runs", "example": "shipped example (another machine; not your data)"}


def _user_first(rows):
    return sorted(rows, key=lambda r: r["origin"] != "user")


def experiment_table(perf):
    """One row per platform (system and host class, examples apart), partition, environment, case
    and metric, over all of the case's repeats (median, range and n of every sample; failed if any
    repeat failed). Whole-column operations: a page of 100 000 rows takes a fraction of a second,
    not a Python loop per group."""
    keys = ["platform", "origin", "partition", "environ", "case", "metric"]
    if perf.empty:
        return []
    perf = perf.assign(environ=perf["environ"].fillna(NO_ENVIRON),
                       case=perf["case"].str.partition(" %repeat=")[0])
    grouped = perf.groupby(keys, sort=True)
    table = grouped["value"].agg(["median", "min", "max", "size"]).rename(columns={"size": "n"})
    table["ref_value"] = grouped["ref_value"].first()          # the first reference given
    table["failed"] = (perf["result"] == "fail").groupby([perf[k] for k in keys], sort=True).any()
    # unit and bounds of each group's first row (groupby's "first" would skip missing values)
    first = perf.dropna(subset=keys).drop_duplicates(keys).set_index(keys)
    table = table.join(first[["unit", "ref_lower", "ref_upper"]]).reset_index()
    table["target"] = target_of(table["platform"], table["partition"], table["environ"])
    rows = [{"target": r.target, "origin": r.origin, "case": r.case, "metric": r.metric,
             "median": r.median, "min": r.min, "max": r.max, "n": int(r.n), "unit": r.unit,
             "reference": _reference_text(r.ref_value, r.ref_lower, r.ref_upper),
             "result": "fail" if r.failed else "pass"} for r in table.itertuples(index=False)]
    return _user_first(rows)


def load_runs(results_dir, systems, examples_dir=None):
    """Provenance of the user's runs, then of the shipped examples, each with its ``host_class``
    (``crosstalk.site.hostclass.from_provenance``), ``origin`` and ``platform``."""
    runs = []
    for root, origin in ((results_dir, "user"), (examples_dir, "example")):
        for path in sorted(Path(root).glob("*/runs/*/provenance.json")) if root else ():
            system = path.parent.parent.parent.name
            if systems and system not in systems:
                continue
            try:
                prov = load_provenance(path.parent)
            except InputError:
                continue   # already reported by collect
            host = from_provenance(prov)
            runs.append({**prov, "run_id": prov.get("run_id", path.parent.name),
                         "topology": topology_of(prov),
                         "balance_text": describe_balance(prov["balance"]) if prov.get("balance") else None,
                         "system": prov.get("system", system), "host_class": host, "origin": origin,
                         "platform": platform_of(prov.get("system", system), host["id"], origin)})
    return runs


def platform_table(cases, runs):
    """One row per platform: system, host class, origin, runs and case results; the user's first."""
    found = {(r["platform"], r["system"], r["host_class"]["id"], r["host_class"]["label"], r["origin"],
              r["run_id"]) for r in runs}
    found |= set(cases[["platform", "system", "host_class", "host_label", "origin", "run_id"]]
                 .itertuples(index=False, name=None))
    counts = cases.groupby(["platform", "result"]).size()
    rows = {}
    for platform, system, host_class, label, origin, _ in sorted(found):
        rows[platform] = {"platform": platform, "system": system, "host_class": host_class,
                          "host_label": label, "origin": origin, "origin_text": ORIGIN_TEXT[origin],
                          "runs": len({f[5] for f in found if f[0] == platform}),
                          **{k: int(counts.get((platform, k), 0)) for k in ("pass", "fail", "skip")}}
    return _user_first(rows.values())


def paper_order(key):
    """Papers in the bibliography's order (that of the seeds the experiments come from)."""
    keys = list(bibliography())
    return keys.index(key) if key in keys else len(keys)


def latest_runs(runs):
    """``{(platform, experiment): provenance}`` of the newest of the user's runs of each."""
    latest = {}
    for prov in sorted((r for r in runs if r["origin"] == "user"), key=lambda r: r["run_id"]):
        for experiment in prov.get("specs", {}):
            latest[(prov["platform"], experiment)] = prov
    return latest


def claim_tables(verdicts, labels, runs=()):
    """The verdicts, one table per paper (in paper order): a row per claim, a cell per platform
    (``labels``: platform -> its host class's label, in the order shown); per platform how many
    claims were decided; and on the user's platforms, each claim still open with why and the
    command that would decide it. ``verdicts``: those of ``crosstalk.claims.judge`` on the page's
    rows."""
    platforms = list(labels)
    from crosstalk.claims import VERDICTS, counts
    from crosstalk.claims.present import (
        citation as claim_citation,
        decided_text,
        main_job_text,
        open_question,
        paper_text,
        summary,
        unmeasured,
        why,
        with_moves,
    )
    notes = {}      # (platform, text) -> the note's anchor and number: each note once per platform

    def note_of(v, platform):
        text = why(v)
        if not text:
            return None
        mine = [k for k in notes if k[0] == platform]
        if (platform, text) not in notes:
            slug = re.sub(r"[^a-z0-9]+", "-", platform.lower()).strip("-")
            notes[(platform, text)] = {"anchor": f"note-{slug}-{len(mine) + 1}", "n": len(mine) + 1}
        return notes[(platform, text)]
    platforms = [p for p in platforms if p not in moved_only(verdicts)]
    cells = {}
    for p in platforms:
        for v in with_moves(verdicts, p):      # a claim the main job judged elsewhere: that verdict
            moved = [f"judged on {v['system']}, where the main job ran {v['experiment']}"] if v["platform"] != p else []
            cells[(v["id"], p)] = {"verdict": v["verdict"], "lines": moved + summary(v), "why": note_of(v, p)}
    papers, checks = {}, {}
    for v in verdicts:
        rows = papers.setdefault(v["paper"], {}) if v.get("kind", "paper") == "paper" else checks
        rows.setdefault(v["id"], {"id": v["id"], "claim": v["claim"], "citation": claim_citation(v),
                                  "artefact": v["artefact"], "paper": paper_text(v), "quote": v.get("quote"),
                                  "differs": v.get("differs")})

    def with_cells(rows):
        return [{**row, "cells": [cells.get((row["id"], p)) for p in platforms]} for row in rows.values()]
    bib = bibliography()
    tables = [{"paper": key, "heading": f"{bib[key]['short']}: {bib[key]['title']}", "claims": with_cells(rows)}
              for key, rows in sorted(papers.items(), key=lambda kv: paper_order(kv[0]))]
    totals = {p: counts([v for v in verdicts if v["platform"] == p]) for p in platforms}
    latest = latest_runs(runs)
    still_open = [{"platform": v["platform"], "id": v["id"], "citation": claim_citation(v),
                   **open_question(v, latest.get((v["platform"], v["experiment"])))}
                  for v in verdicts if v["origin"] == "user" and v["verdict"] == "inconclusive"]
    platform_notes = {p: [{**ref, "text": text} for (q, text), ref in notes.items() if q == p] for p in platforms}
    return {"platforms": platforms, "labels": labels, "tables": tables, "checks": with_cells(checks),
            "notes": platform_notes,
            "totals": totals, "order": VERDICTS,
            "decided": {p: decided_text(totals[p], unmeasured([v for v in verdicts if v["platform"] == p]))
                        for p in platforms},
            "main_job": {p: main_job_text(verdicts, p) for p in platforms}, "open": still_open}


def moved_only(verdicts):
    """Platforms that only hold experiments another platform's main job moved there (e.g. vcsand,
    shaped like Red Storm for E6): shown in the mover's column, not as a column of "not run"."""
    moved = {}
    for v in verdicts:
        if v.get("judged_on"):
            moved.setdefault((v["judged_on"], v["origin"]), set()).add(v["experiment"])
    out = set()
    for p in {v["platform"] for v in verdicts}:
        mine = [v for v in verdicts if v["platform"] == p]
        ran = {v["experiment"] for v in mine if v.get("measured", True)}
        if ran and ran <= moved.get((mine[0]["system"], mine[0]["origin"]), set()):
            out.add(p)
    return out


@lru_cache(maxsize=None)
def page_template():
    """The report page's template, compiled once per process (the pages' workers fork after it)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.filters["num"] = format_number
    env.filters["citation"] = citation
    return env.get_template("report.html.j2")


def write_report(perf, cases, errors, systems, figures_dir, out, results_dir, verdicts,
                 captions=None, extra_sections=None, examples_dir=None, overview=None, svg=False):
    """Render the report page. ``figures_dir`` holds ``<id>.png`` (and ``.svg`` with ``svg``);
    paths become relative.
    Runs under ``examples_dir`` (the shipped examples) are listed apart and counted apart.
    ``verdicts``: the claims as judged on these rows (crosstalk.claims.judge, the workflow's
    verdicts job); ``overview``: the overview page, on a system's page, whose figures (every
    system's) it shows."""
    out = Path(out)
    rel = os.path.relpath(figures_dir, out.parent)
    captions = captions or {}
    experiments = []
    for spec in all_specs():
        exp_perf = perf[perf.experiment == spec.name]
        exp_cases = cases[(cases.experiment == spec.name) & (cases.result != "pass")]
        experiments.append({
            "name": spec.name, "title": spec.data["title"], "citations": spec.data["citations"],
            "figures": [{**fig, "png": f"{rel}/{fig['id']}.png", "svg": f"{rel}/{fig['id']}.svg" if svg else None,
                         "caption": captions.get(fig["id"], "")} for fig in spec.data.get("figures", [])],
            "table": experiment_table(exp_perf),
            "not_run": _user_first({"target": target_of(c.platform, c.partition, c.environ), "origin": c.origin,
                                    "case": c.case, "result": c.result, "reason": c.reason}
                                   for c in exp_cases.itertuples()),
        })
    counts = {origin: {k: int(((cases.origin == origin) & (cases.result == k)).sum())
                       for k in ("pass", "fail", "skip")} for origin in ("user", "example")}
    runs = load_runs(results_dir, systems, examples_dir)
    platforms = platform_table(cases, runs)
    claims = claim_tables(verdicts, {p["platform"]: p["host_label"] for p in platforms}, runs)
    experiments.sort(key=lambda e: paper_order(e["citations"][0]["paper"]))
    html = page_template().render(
        systems=systems or sorted({p["system"] for p in platforms}), experiments=experiments,
        counts=counts, errors=errors, platforms=platforms, runs=runs, claims=claims,
        overview=os.path.relpath(overview, out.parent) if overview else None,
        origin_text=ORIGIN_TEXT, extra_sections=extra_sections or [],
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out


def benchmark_sections(results_dir):
    import markdown
    sections = []
    for title, rel in BENCHMARK_PAGES:
        path = Path(results_dir) / rel
        if path.exists():
            # the page's own headings go below the section's <h2>
            text = re.sub(r"^(#{1,4}) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", path.read_text(),
                          flags=re.M)
            sections.append({"title": title, "html": markdown.markdown(text, extensions=["tables"])})
    return sections
