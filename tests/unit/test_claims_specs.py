"""The claims the specs list: ids unique across specs, and which redrawn artefacts still lack one."""
from collections import Counter

from crosstalk.claims import spec_claims
from crosstalk.specs import all_specs

#: Artefacts still without a claim (none: every redrawn table and figure has one).
PENDING = set()


def test_claim_ids_are_unique_across_specs():
    ids = Counter(claim["id"] for _, claim in spec_claims())
    assert [cid for cid, n in ids.items() if n > 1] == []


def test_every_redrawn_artefact_but_the_pending_ones_has_a_claim():
    figures = {fig["id"] for spec in all_specs() for fig in spec.data.get("figures", [])}
    claimed = {claim.get("artefact") for _, claim in spec_claims()}
    assert figures - claimed == PENDING
