"""Inventory reading and input errors of the virtual cluster (no root needed)."""
import shutil

import pytest
import yaml
from vcluster_fixtures import INVENTORY

from crosstalk.errors import CrosstalkError, InputError
from crosstalk.vcluster import VCluster, format_rate, parse_rate, tbf_burst

# Inventory reading only: no cluster is brought up (fast tier).


def test_default_inventory():
    vc = VCluster.from_inventory(INVENTORY)
    assert vc.nodes == ["n1", "n2", "n3", "n4"]
    assert vc.addresses["n3"] == "198.18.0.3"
    assert vc.node_rates == {n: 1_000_000_000 for n in vc.nodes}
    assert str(vc.state) == "/run/crosstalk/vcluster"


def test_overrides():
    vc = VCluster.from_inventory(INVENTORY, nodes=8, link_rate="250mbit", name="vclt",
                                 subnet="198.19.0.0/24")
    assert vc.nodes[-1] == "n8" and vc.addresses["n8"] == "198.19.0.8"
    assert vc.node_rates["n5"] == 250_000_000 and str(vc.state) == "/run/crosstalk/vclt"


def test_rates_and_burst():
    assert parse_rate("2.5gbit") == 2_500_000_000 and format_rate(250_000_000) == "250mbit"
    assert tbf_burst(100_000_000) == 128 * 1024           # floor for slow links
    assert tbf_burst(10_000_000_000) == 2_500_000         # 2 ms at 10 Gbit/s


def _copy(tmp_path):
    inv = tmp_path / "inv"
    shutil.copytree(INVENTORY, inv)
    return inv


def _edit(path, fn):
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize("edit, where", [
    (lambda g: g.update(vcluster_subnet="198.20.0.0/24"), "vcluster_subnet"),
    (lambda g: g.update(vcluster_link_rate="fast"), "vcluster_link_rate"),
    (lambda g: g.update(vcluster_injection_cap="1 gig"), "vcluster_injection_cap"),
    (lambda g: g.update(vcluster_widths={"4X": 1}), "vcluster_widths"),
])
def test_bad_group_vars(tmp_path, edit, where):
    inv = _copy(tmp_path)
    _edit(inv / "group_vars" / "all" / "vcluster.yml", edit)
    with pytest.raises(InputError) as err:
        VCluster.from_inventory(inv)
    assert str(err.value).startswith(f"{inv}/group_vars/all/vcluster.yml: {where}: ")


@pytest.mark.parametrize("edit, where", [
    (lambda h: h["all"]["children"]["vcluster_nodes"]["hosts"]["n2"].update(
        vcluster_address="198.18.0.9"), "n2.vcluster_address"),
    (lambda h: h["all"]["children"]["vcluster_nodes"]["hosts"]["n4"].update(
        vcluster_link_rate="lots"), "n4.vcluster_link_rate"),
    (lambda h: h["all"]["children"]["vcluster_nodes"]["hosts"].update(node7={}),
     "vcluster_nodes.hosts.node7"),
])
def test_bad_hosts(tmp_path, edit, where):
    inv = _copy(tmp_path)
    hosts = inv / "hosts.yml"
    data = yaml.safe_load(hosts.read_text())
    for h in data["all"]["children"]["vcluster_nodes"]["hosts"]:
        data["all"]["children"]["vcluster_nodes"]["hosts"][h] = \
            data["all"]["children"]["vcluster_nodes"]["hosts"][h] or {}
    edit(data)
    hosts.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as err:
        VCluster.from_inventory(inv)
    assert str(err.value).startswith(f"{hosts}: {where}: ")


def test_bad_overrides():
    with pytest.raises(CrosstalkError, match="subnet: 198.20.0.0/24: outside"):
        VCluster.from_inventory(INVENTORY, subnet="198.20.0.0/24")
    with pytest.raises(CrosstalkError, match="nodes: 17"):
        VCluster.from_inventory(INVENTORY, nodes=17)
    with pytest.raises(CrosstalkError, match="link_rate: 'x'"):
        VCluster.from_inventory(INVENTORY, link_rate="x")


def test_a_copy_under_another_name_is_another_cluster(tmp_path):
    """The cluster is named after the system (crosstalk.yml), its state and ReFrame configuration
    follow: a copy of the inventory edited as a site would needs no other change."""
    from crosstalk.site.inventory import load_system
    inv = _copy(tmp_path)
    _edit(inv / "group_vars" / "all" / "crosstalk.yml",
          lambda d: d["crosstalk_system"].update(name="vcsix"))
    _edit(inv / "group_vars" / "all" / "vcluster.yml",
          lambda d: d.update(vcluster_subnet="198.19.6.0/24", vcluster_link_rate="500mbit"))
    _edit(inv / "hosts.yml", lambda h: h["all"]["children"]["vcluster_nodes"].update(
        hosts={f"n{i}": {"vcluster_address": f"198.19.6.{i}"} for i in range(1, 7)}))
    vc = VCluster.from_inventory(inv)
    assert (vc.name, str(vc.state), len(vc.nodes)) == ("vcsix", "/run/crosstalk/vcsix", 6)
    system = load_system(inv)
    assert system["kind"] == "vcluster" and system["network"]["link_rate"] == "500mbit"
    for part in system["partitions"]:
        assert part["nodes"] == 6
        assert part["env_vars"]["SLURM_CONF"] == "/run/crosstalk/vcsix/slurm.conf"
        assert part["extras"]["vcluster_inventory"] == str(inv)
    mpi = next(p for p in system["partitions"] if p["launcher"] == "mpirun")
    assert mpi["env_vars"]["OMPI_MCA_plm_rsh_agent"] == "/run/crosstalk/vcsix/bin/rsh-agent"


def test_partition_larger_than_the_cluster_is_refused(tmp_path):
    from crosstalk.site.inventory import load_system
    inv = _copy(tmp_path)
    _edit(inv / "group_vars" / "all" / "crosstalk.yml",
          lambda d: d["crosstalk_system"]["partitions"][0].update(nodes=9))
    with pytest.raises(InputError, match=r"partitions\[0\]\.nodes: 9 nodes, the cluster has 4"):
        load_system(inv)
