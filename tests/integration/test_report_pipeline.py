"""The Snakemake analysis for real, on run directories committed from real runs: the local STREAM
runs in tests/fixtures/runs as the user's, and the virtual cluster's quick-suite runs shipped as
examples (examples/vcluster/runs, the references' calibration evidence), which the pipeline finds by
itself; one of them is also copied into the results as if the user had run it. Every figure the
specs list is drawn, the report is written, the systems and host classes are drawn side by side with
the examples kept apart, and the workflow passes `snakemake --lint`. Two reports are started at
once on the same results: the second waits for the first and the table they leave is whole."""
import json
import re
import shutil
import subprocess

import pandas as pd
import pytest
from xt_testing import REPO, tool_env, venv_tool

from crosstalk import examples_root
from crosstalk.analysis.ingest import attempt_testcases
from crosstalk.analysis.report import experiment_table, write_report
from crosstalk.analysis.workflow import WORKFLOW, figure_ids
from crosstalk.claims import spec_claims
from crosstalk.cli import main
from crosstalk.figures import FIGURES
from crosstalk.site.hostclass import from_provenance

#: Two whole Snakemake reports and a headless browser.
pytestmark = pytest.mark.slow

FIXTURES = REPO / "tests" / "fixtures" / "runs"
#: The shipped example with the most test cases, copied into the results as a user's run.
COPIED = max(examples_root().glob("vcluster/runs/*/report.json"), key=lambda p: p.stat().st_size).parent
HOST_CLASS = from_provenance(json.loads((COPIED / "provenance.json").read_text()))["id"]


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    for system_dir in FIXTURES.iterdir():
        if system_dir.is_dir():
            shutil.copytree(system_dir, results / system_dir.name)
    shutil.copytree(COPIED, results / "vcluster" / "runs" / COPIED.name)
    (results / "bench").mkdir()
    shutil.copy(REPO / "results" / "bench" / "analysis-scale.md", results / "bench")
    env = dict(tool_env(), CROSSTALK_RESULTS_DIR=str(results))
    # Two reports at once, as two users or a cron job and a person would: the second waits for the
    # first, and every test below checks the table and report they leave.
    procs = [subprocess.Popen([venv_tool("crosstalk"), "report"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = [proc.communicate(timeout=1800) for proc in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return results, [out for out, _ in outputs]


@pytest.fixture(scope="module")
def analysed(reported):
    return reported[0]


def test_a_second_report_at_once_waits_for_the_first(reported):
    waited = [err for err in reported[1] if "waiting for crosstalk report (pid" in err]
    assert len(waited) == 1, reported[1]


def test_a_benchmark_page_is_shown_as_a_table_not_as_markup(analysed):
    page = (analysed / "report.html").read_text()
    section = page.split("<h2>Analysis scale</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<table>" in section and "&lt;" not in section, section[:500]


def test_every_listed_figure_has_a_drawing_function():
    assert set(figure_ids()) <= set(FIGURES), set(figure_ids()) - set(FIGURES)


def test_every_experiment_of_the_virtual_cluster_is_collected(analysed):
    from crosstalk.specs import all_specs
    table = pd.read_parquet(analysed / "table.parquet")
    vc = table[table.system == "vcluster"]
    assert set(vc.experiment) == {spec.name for spec in all_specs()}
    assert set(vc.partition) == {"mpi", "slurm"}
    examples = {p.name for p in examples_root().glob("vcluster/runs/*")}
    assert set(vc[vc.origin == "example"].run_id) == examples
    assert set(table[table.origin == "user"].run_id) == {COPIED.name} | {
        p.name for p in FIXTURES.glob("*/runs/*")}


def test_every_figure_and_the_reports(analysed):
    page = (analysed / "report.html").read_text()
    for fig in figure_ids():
        png = analysed / "figures" / f"{fig}.png"
        assert png.read_bytes()[:4] == b"\x89PNG", fig
        assert not (analysed / "figures" / f"{fig}.svg").exists()      # SVG only when asked for (--svg)
        assert f"figures/{fig}.svg" not in page
        assert f"figures/{fig}.png" in page
    for system in ("local", "vcluster"):
        system_page = (analysed / system / "report.html").read_text()
        # a system's page shows the overview's drawings (every system's series), drawn once
        assert all(f'src="../figures/{fig}.png"' in system_page for fig in figure_ids())
        assert 'href="../report.html">overview</a>' in system_page
        assert not (analysed / system / "figures").exists()
    table = pd.read_parquet(analysed / "table.parquet")
    for platform, partition, environ in set(zip(table.platform, table.partition, table.environ.fillna("-"))):
        assert f"{platform}:{partition}+{environ}</td>" in page
    assert f"vcluster@{HOST_CLASS} (example):mpi" in (analysed / "vcluster" / "report.html").read_text()
    assert "4 threads &gt; 2 cores" in page          # skip reasons reach the report


def test_an_example_copied_as_a_users_run_stays_apart(analysed):
    """The same run as the user's and as a shipped example: two platforms, never pooled."""
    table = pd.read_parquet(analysed / "table.parquet")
    copied = table[table.run_id == COPIED.name]
    mine, shipped = copied[copied.origin == "user"], copied[copied.origin == "example"]
    assert set(mine.platform) == {f"vcluster@{HOST_CLASS}"}
    assert set(shipped.platform) == {f"vcluster@{HOST_CLASS} (example)"}
    assert len(mine) == len(shipped) > 0
    rows = experiment_table(table)
    assert all(("(example):" in r["target"]) == (r["origin"] == "example") for r in rows)
    # The user's rows are exactly what the user's runs alone give: no example value is pooled in.
    mine_alone = pd.DataFrame(experiment_table(table[table.origin == "user"]))
    assert pd.DataFrame([r for r in rows if r["origin"] == "user"]).equals(mine_alone)   # NaN == NaN


def test_the_report_labels_the_examples_and_counts_them_apart(analysed):
    page = (analysed / "report.html").read_text()
    cases = pd.read_parquet(analysed / "cases.parquet")
    mine = cases[cases.origin == "user"]
    top = page[:page.index("<h2", page.index('id="platforms"') + 1)]
    assert (f"your runs: {mine.run_id.nunique()} &middot;" in top
            and f"{(mine.result == 'pass').sum()} passed</span>" in top)
    shipped = cases[cases.origin == "example"]
    assert f"{shipped.run_id.nunique()} runs shipped with crosstalk" in top
    assert f"{(shipped.result == 'pass').sum()} passed," in top
    platforms = top[top.index('id="platforms"'):]
    user_row = platforms.index(f"<td>vcluster@{HOST_CLASS}</td>")
    example_row = platforms.index(f"<td>vcluster@{HOST_CLASS} (example)</td>")
    assert platforms.index("<td>local@") < example_row and user_row < example_row   # user first
    assert "shipped example (another machine; not your data)" in platforms[example_row:]
    provenance = page[page.index("<h2>Provenance"):]
    assert provenance.count(f"<td>{COPIED.name}</td>") == 2 and "your runs" in provenance


def test_no_examples_flag_leaves_them_out(monkeypatch):
    """`crosstalk report` passes the examples root to the workflow; --no-examples an empty one."""
    import crosstalk.analysis.workflow
    argvs = []
    monkeypatch.setattr(crosstalk.analysis.workflow, "run", lambda argv, *a, **k: argvs.append(argv) or
                        subprocess.CompletedProcess(argv, 1))
    main(["report"])
    main(["report", "--no-examples"])
    assert f"examples={examples_root()}" in argvs[0] and "examples=" in argvs[1]


def test_the_report_opens_with_the_verdicts(analysed):
    page = (analysed / "report.html").read_text()
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", page)
    assert headings[0] == "What the papers claim, and what reproduces here"
    papers = {claim["paper"] for _, claim in spec_claims()}
    # one per paper, and one of the checks of a platform, apart (they are no paper's claim)
    assert page.count('<table class="verdicts">') == len(papers) + 1 and len(papers) >= 4
    assert '<h3 id="checks">Checks of this platform</h3>' in page
    assert "<th>vcluster@%s<br>" % HOST_CLASS in page                        # the user's copy, judged
    for verdict in ("reproduced", "contradicted", "not run"):
        assert f'<span class="v-{verdict.replace(" ", "-")}">{verdict}</span>' in page


def test_in_a_browser_every_figure_loads_and_every_link_resolves(analysed):
    """Headless Chromium (Debian's) loads the page as a reader would; the page's own check marks
    any image that did not load. Links: every #anchor is an element id, every file link exists."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is installed by playbooks/provision.yml (packages role)"
    page = analysed / "report.html"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                           "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180)
    dom = proc.stdout
    checked = re.search(r'data-images-checked="(\d+)"', dom)
    assert checked, proc.stderr[-2000:]
    assert int(checked.group(1)) == len(figure_ids()) and 'data-images-broken="0"' in dom
    ids = set(re.findall(r'\bid="([^"]+)"', dom))
    for href in set(re.findall(r'href="([^"]+)"', dom)):
        if href.startswith("#"):
            assert href[1:] in ids, href
        elif not re.match(r"^[a-z]+:", href):
            assert (page.parent / href).exists(), href


def planned_jobs(results):
    """``[(rule, system wildcard or None)]`` of the jobs a dry run of the workflow plans."""
    argv = [venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--cores", "2", "--dry-run",
            "--config", f"results={results}", f"examples={examples_root()}"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    blocks = re.split(r"^(?:local)?rule (\w+):$", proc.stdout, flags=re.M)[1:]
    return [(name, (re.findall(r"^\s+wildcards: system=(\S+)$", body, flags=re.M) or [None])[0])
            for name, body in zip(blocks[::2], blocks[1::2])]


def test_a_new_run_redraws_its_system_and_the_overview_only(analysed):
    """Up to date, nothing is planned; with a new run of one system, its table and the overview's,
    the figures (every system's, drawn once) and the pages are; the other system's table is not
    collected again."""
    assert planned_jobs(analysed) == []
    runs = analysed / "local" / "runs"
    added = runs / "20991231T000000Z-new"
    shutil.copytree(min(runs.iterdir()), added)
    try:
        jobs = planned_jobs(analysed)
    finally:
        shutil.rmtree(added)
    assert sorted(jobs, key=str) == sorted([("system_table", "local"), ("collect", None), ("figures", None),
                                            ("verdicts", None), ("report", None), ("all", None)], key=str)


def test_a_kept_probe_output_is_an_input_of_its_systems_figures_and_pages(analysed):
    """E5's figures and fits read probe samples from kept job outputs (RAW_OUTPUTS): the workflow
    declares them, so a new or changed one redraws the figures, judges the claims and writes the
    pages again, and leaves the tables alone."""
    assert planned_jobs(analysed) == []
    run = analysed / "vcluster" / "runs" / COPIED.name
    case = next(c for c in attempt_testcases(run) if c["name"].startswith("ActiveProbing") and c["result"] == "pass")
    assert not (run / "output").exists()      # the shipped example keeps no job outputs
    kept = run / "output" / "vcluster" / case["partition"] / case["environ"] / case["short_name"]
    kept.mkdir(parents=True)
    try:
        (kept / "idle_probe.out").write_text("")
        jobs = planned_jobs(analysed)
    finally:
        shutil.rmtree(run / "output")
    assert sorted(jobs, key=str) == sorted([("figures", None), ("verdicts", None), ("report", None), ("all", None)],
                                           key=str)


def test_a_systems_page_shows_the_verdicts_its_own_rows_give(analysed):
    """The pages job judges the claims once, on every system's rows, and gives each system's page
    the verdicts of its platforms: the same as judging that system's rows alone, because a
    platform's verdicts depend on its rows only."""
    from crosstalk.analysis.pages import rows_of, verdicts_of
    from crosstalk.claims import judge
    perf, cases = (pd.read_parquet(analysed / name) for name in ("table.parquet", "cases.parquet"))
    everyone = judge(perf, cases)
    assert {v["system"] for v in everyone} == {"local", "vcluster"}
    for system in ("local", "vcluster"):
        own_perf, own_cases = rows_of(perf, [system]), rows_of(cases, [system])
        shown, own = (json.dumps(v, sort_keys=True, default=str)         # NaN == NaN as text
                      for v in (verdicts_of(everyone, own_perf, own_cases), judge(own_perf, own_cases)))
        assert shown == own, system


def test_a_page_from_the_verdicts_file_is_the_page_from_the_verdicts(analysed, tmp_path):
    """The pages are written from verdicts.json (judged by a job of its own): the same page as
    from the verdicts in memory, on both systems' rows."""
    from crosstalk.claims import judge
    from crosstalk.claims.verdictfile import read, write
    perf, cases = (pd.read_parquet(analysed / name) for name in ("table.parquet", "cases.parquet"))
    verdicts = judge(perf, cases)
    write(tmp_path / "verdicts.json", verdicts)
    pages = []
    for name, given in (("memory.html", verdicts), ("file.html", read(tmp_path / "verdicts.json"))):
        page = write_report(perf, cases, [], [], analysed / "figures", tmp_path / name, analysed, given,
                            examples_dir=examples_root())
        pages.append(re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", page.read_text()))
    assert pages[0] == pages[1]
    assert (analysed / "verdicts.json").is_file()         # the workflow's, for any tool to read
    assert {v["platform"] for v in read(analysed / "verdicts.json")} == {v["platform"] for v in verdicts}


def test_systems_subset_via_config(analysed, tmp_path):
    """--config systems=[local] redraws the combined report from that system alone, its examples
    (none) included. On a copy: the other tests read the report of both systems, in any order."""
    subset = tmp_path / "results"
    shutil.copytree(analysed, subset)
    argv = [venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--cores", "2", "--forceall",
            "--quiet", "all", "--config", f"results={subset}", "systems=[local]"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (subset / "report.html").read_text()
    assert "local@" in page and "vcluster@" not in page


def test_workflow_lint_is_clean():
    proc = subprocess.run([venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--lint"],
                          capture_output=True, text=True, env=tool_env(), timeout=300)
    assert proc.returncode == 0 and "good condition" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("bad, says", [("systems=local", "'local' is not of type 'array'"),
                                       ("system=[local]", "'system' was unexpected")])
def test_a_bad_workflow_config_stops_before_any_rule(tmp_path, bad, says):
    """workflows/schemas/config.schema.yaml is validated at start: a misspelt key or a value of
    the wrong type is refused by name, and nothing is collected or drawn."""
    proc = subprocess.run([venv_tool("snakemake"), "-s", str(WORKFLOW), "-d", str(REPO), "--cores", "1", "all",
                           "--config", f"results={tmp_path}", bad],
                          capture_output=True, text=True, env=tool_env(), timeout=300)
    assert proc.returncode != 0 and says in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_table_cut_short_and_verdicts_removed_are_made_again_by_the_next_report(analysed, tmp_path):
    """On a copy: the overview's table cut short (a copy between machines that stopped) and the
    verdicts removed; the next `crosstalk report` says so, collects the same rows again and writes
    the verdicts, exit 0 (Snakemake took the table for made, and every later rule failed on it)."""
    results = tmp_path / "results"
    shutil.copytree(analysed, results)
    table = results / "table.parquet"
    rows = pd.read_parquet(table)
    table.write_bytes(table.read_bytes()[:-20])
    (results / "verdicts.json").unlink()
    proc = subprocess.run([venv_tool("crosstalk"), "report"], capture_output=True, text=True, timeout=900,
                          env=dict(tool_env(), CROSSTALK_RESULTS_DIR=str(results)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"{table} is cut short or unreadable: making it again" in proc.stdout
    pd.testing.assert_frame_equal(pd.read_parquet(table), rows)
    assert (results / "verdicts.json").is_file()
