"""The claims the specs list: ids unique across specs, which redrawn artefacts still lack one, and the
catalogue (docs/claims-catalogue.md) in step with each claim's kind and `differs:`."""
import re
from collections import Counter
from pathlib import Path

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


def _catalogue_rows():
    """{claim id: (kind, difference)} from docs/claims-catalogue.md's table of each claim's quantity."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "claims-catalogue.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z0-9-]+)` \| (paper|check) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), line.strip().strip("|").split(" | ")[-1].strip())
    return rows


def test_the_catalogue_gives_each_claim_its_kind_and_its_differs():
    # the catalogue says its last column is the claim's `differs:`; a row cut short ends in "…"
    rows = _catalogue_rows()
    for _, c in spec_claims():
        kind, difference = rows.get(c["id"], (None, None))
        assert kind == c.get("kind", "paper"), f"{c['id']}: catalogue kind {kind}"
        differs = (c.get("differs") or "").replace("|", "\\|")
        assert differs, f"{c['id']} says nowhere how it differs from the paper (or that it does not)"
        if difference.endswith("…"):
            assert differs.startswith(difference[:-1].rstrip()), c["id"]
        else:
            assert difference == differs, c["id"]
    assert set(rows) == {c["id"] for _, c in spec_claims()}
