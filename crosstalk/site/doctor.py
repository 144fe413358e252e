"""``crosstalk doctor``: what this machine has (crosstalk.site.probes), and which experiments will run
or be skipped.
"""
import sys

from crosstalk import reference_file
from crosstalk.site.hostclass import host_class
from crosstalk.site.inventory import load_system, resolve_inventory
from crosstalk.site.probes import detected_capabilities, probe_all
from crosstalk.specs import all_specs


def experiment_plan(capabilities):
    """Per experiment: 'runs', 'runs partly' or 'skipped', with the reasons."""
    plan = []
    for spec in all_specs():
        missing = [c for c in spec.data.get("requires", []) if not capabilities.get(c)]
        if missing:
            plan.append((spec.name, "skipped", [f"needs {', '.join(missing)}"]))
            continue
        notes = []
        for inst in spec.data["instruments"]:
            lacking = [c for c in inst.get("requires", []) if not capabilities.get(c)]
            if lacking:
                instead = f"; uses {inst['fallback']} instead" if inst.get("fallback") else "; skipped"
                notes.append(f"{inst['name']} needs {', '.join(lacking)}{instead}")
        plan.append((spec.name, "runs partly" if notes else "runs", notes))
    return plan


def report(inventory=None, out=sys.stdout):
    if inventory is not None:
        inventory = resolve_inventory(inventory)      # a bad name fails before any probe runs
    findings = probe_all()
    width = max(len(f.name) for f in findings)
    print("This machine:", file=out)
    for f in findings:
        mark = "yes" if f.present else "no "
        print(f"  {f.name:<{width}}  {mark}  {f.detail}", file=out)
    caps = detected_capabilities(findings)
    if inventory is not None:
        system = load_system(inventory)
        declared = system["capabilities"]
        # link_control is a property of the fabric (virtual cluster or site hook), not of this host.
        hardware = ("rdma", "cpufreq", "rapl", "apptainer", "spack")
        differ = [k for k in hardware if declared.get(k) != caps[k]]
        print(f"\nInventory '{system['name']}':", file=out)
        for key in differ:
            print(f"  {key}: inventory says {declared[key]}, this machine has {caps[key]}", file=out)
        if not differ:
            print("  capability flags agree with this machine", file=out)
        host = host_class(system.get("network"))
        refs = reference_file(system["name"], host["id"])
        print(f"  host class {host['id']}: {host['label']}", file=out)
        print(f"  references: {refs or 'none for this host class (runs in explore mode)'}", file=out)
    print("\nExperiments:", file=out)
    for name, verdict, notes in experiment_plan(caps):
        print(f"  {name:<16} {verdict}", file=out)
        for note in notes:
            print(f"  {'':<16}   - {note}", file=out)
    return 0


def register(subparsers):
    p = subparsers.add_parser("doctor", help="show what this machine has and what will run")
    p.add_argument("--inventory", "-i", help="also compare with this inventory's capability flags")
    p.set_defaults(func=lambda args: report(args.inventory))
