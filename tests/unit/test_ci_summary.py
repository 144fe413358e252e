"""`.ci/run`'s summary of where the time went: a real pytest run's JUnit file carries each test's
tier and worker group (tests/conftest.py), and the summary prints the time per tier, the slowest
tests and groups, and a warning for a tier over the budget docs/testing.md writes."""
import subprocess
import sys

from xt_testing import REPO

sys.path.insert(0, str(REPO / "scripts"))
import bench_test_tiers  # noqa: E402

#: A real run of a small, pure module (1.4 s; tests/unit/test_forked.py's judging took 8 s).
REAL_MODULE = "tests/unit/test_vcluster_balance_plan.py"


def test_the_summary_reads_tiers_and_groups_from_a_real_run(tmp_path):
    junit = tmp_path / "ci.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", REAL_MODULE], cwd=REPO, check=True, timeout=300,
                   capture_output=True, stdin=subprocess.DEVNULL)
    cases = bench_test_tiers.junit_cases([junit])
    assert cases and {c["tier"] for c in cases} == {"fast"}
    assert {c["group"] for c in cases} == {REAL_MODULE}
    text = bench_test_tiers.ci_summary([junit], workers=2)
    assert "| fast | " in text and "slowest 20 worker groups" in text and f"`{REAL_MODULE}`" in text
    assert "WARNING" not in text      # seconds against a 180 s budget


def test_a_tier_over_its_budget_is_warned(tmp_path):
    junit = tmp_path / "ci.xml"
    junit.write_text('<testsuites><testsuite time="1500"><testcase classname="tests.unit.test_x" name="t" '
                     'time="400"><properties><property name="tier" value="fast"/><property name="group" '
                     'value="g"/></properties></testcase></testsuite></testsuites>')
    budgets = bench_test_tiers.budgets()
    assert budgets["fast"] == 180 and budgets["suite"] == 1200      # docs/testing.md's table
    text = bench_test_tiers.ci_summary([junit], workers=2)
    assert "WARNING: the fast tier took about 200 s, over its budget of 180 s" in text
    assert "WARNING: the suite took 1500 s, over its budget of 1200 s" in text
