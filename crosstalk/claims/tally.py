"""The verdicts a platform's papers' claims got, counted (a platform's checks apart)."""
from collections import Counter

#: The verdicts in the order they are shown.
VERDICTS = ("reproduced", "contradicted", "inconclusive", "not run", "not applicable")
#: The verdicts that decide a claim.
DECIDED = VERDICTS[:2]


def paper_claims(verdicts):
    """The verdicts of the papers' claims (a platform's checks left out: they are no paper's claim)."""
    return [v for v in verdicts if v.get("kind", "paper") == "paper"]


def counts(verdicts):
    """``{verdict: n}`` over judged paper claims (checks are counted apart), in the order of the verdicts."""
    c = Counter(v["verdict"] for v in paper_claims(verdicts))
    return {v: c.get(v, 0) for v in VERDICTS}
