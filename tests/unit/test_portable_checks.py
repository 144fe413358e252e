"""Portable checks (crosstalk.portable): which cases they concern and when they fail."""
from crosstalk.portable import applies, violation
from crosstalk.specs import load_spec

CHECK = {"name": "incast slows the Allreduce canary", "when": {"congestors": "p2p_incast"},
         "needs": ["link_control"], "metric": "ci_allreduce_avg", "above": 1, "why": "shared link"}


def test_applies_to_the_named_cases_on_capable_partitions():
    shaped = {"link_control": True}
    assert applies(CHECK, {"congestors": "p2p_incast", "pport": 1}, shaped)
    assert not applies(CHECK, {"congestors": "all", "pport": 1}, shaped)
    assert not applies(CHECK, {"congestors": "p2p_incast"}, {"link_control": False})
    assert not applies(CHECK, {}, shaped)           # a test without that parameter (the victim)


def test_holds_above_and_fails_at_or_below_with_one_line():
    assert violation(CHECK, {"ci_allreduce_avg": 85.0}.get) is None
    for value in (1.0, 0.6):
        reason = violation(CHECK, {"ci_allreduce_avg": value}.get)
        assert reason.startswith("portable check 'incast slows the Allreduce canary' failed: "
                                 f"ci_allreduce_avg = {value:.4g} is not above 1")
        assert "\n" not in reason and "shared link" in reason


def test_bound_may_be_another_metric_of_the_case():
    check = {**CHECK, "metric": "probe_median", "above": "idle_probe_median", "when": {}, "needs": []}
    assert violation(check, {"probe_median": 300.0, "idle_probe_median": 50.0}.get) is None
    assert "idle_probe_median = 50" in violation(check, {"probe_median": 40.0,
                                                         "idle_probe_median": 50.0}.get)


def test_shipped_checks_name_real_metrics_and_parameters():
    checks = {name: load_spec(name).data.get("portable_checks", [])
              for name in ("congestion", "active-probing")}
    assert len(checks["congestion"]) == 2 and len(checks["active-probing"]) == 1
    for name, items in checks.items():
        spec = load_spec(name)
        for check in items:
            spec.metric(check["metric"])
            assert set(check.get("when", {})) <= set(spec.profile("quick")["parameters"])
