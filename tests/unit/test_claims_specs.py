"""The claims the specs list: ids unique across specs, and which redrawn artefacts still lack one."""
from collections import Counter

from crosstalk.claims import spec_claims
from crosstalk.specs import all_specs

#: Artefacts whose claims need test kinds not built yet: a ranking across systems or a
#: `where` on the NIC (Table 2.4's onload/offload split), a model fit (Figs 13, 14, 18), and the
#: core-mapping claims, which need the socket layout (docs/claims-catalogue.md, sections 3, 7, 9).
PENDING = {"nimc_table2_4", "casas_prediction_error", "narayanaswamy_fig3_1", "narayanaswamy_table3_2"}


def test_claim_ids_are_unique_across_specs():
    ids = Counter(claim["id"] for _, claim in spec_claims())
    assert [cid for cid, n in ids.items() if n > 1] == []


def test_every_redrawn_artefact_but_the_pending_ones_has_a_claim():
    figures = {fig["id"] for spec in all_specs() for fig in spec.data.get("figures", [])}
    claimed = {claim.get("artefact") for _, claim in spec_claims()}
    assert figures - claimed == PENDING
