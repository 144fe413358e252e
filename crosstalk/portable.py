"""Portable checks: a spec's ``portable_checks`` are directions of an effect that follow from the
setup (congested slower than isolated, loaded slower than idle), not from the hardware, so they are
enforced on every host, with or without references (``xtlib.experiment`` runs them in sanity)."""


def applies(check, params, capabilities):
    """Whether ``check`` concerns a case with these parameter values on a partition with these
    capability flags."""
    return (all(str(params.get(k)) == str(v) for k, v in check.get("when", {}).items())
            and all(capabilities.get(c) for c in check.get("needs", [])))


def violation(check, value_of):
    """None if ``check`` holds, else the one-line reason; ``value_of(metric)`` reads the case."""
    value = value_of(check["metric"])
    bound = check["above"]
    limit = value_of(bound) if isinstance(bound, str) else float(bound)
    if value > limit:
        return None
    return (f"portable check '{check['name']}' failed: {check['metric']} = {value:.4g} is not above "
            f"{bound} = {limit:.4g} ({check['why']})")
