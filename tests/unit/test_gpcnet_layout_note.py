"""The E4 figure says how each target's GPCNeT nodes were laid out, from what its runs were (their
recorded topology and job nodes), never from a system's name."""
import pandas as pd

from crosstalk.figures.gpcnet import layout_note


def rows(topology, nodes):
    return pd.DataFrame({"topology": [topology] * len(nodes), "nodes": nodes})


def test_layout_follows_the_recorded_topology_and_nodes():
    assert layout_note(rows("star", ["n1,n2,n3,n4"])) == "endpoints sharing shaped host links"
    fly = layout_note(rows("dragonfly:groups=3,routers=2,local=1,global=0.25", ["n1,n2"]))
    assert fly.startswith("one endpoint per node") and "dragonfly:groups=3" in fly
    assert layout_note(rows(None, ["myhost", "myhost"])).startswith("one host, no network")
    assert layout_note(rows(None, ["c001,c002", "c003"])) == "one endpoint per node"
