"""Checks of a spec's ``claims:`` beyond the schema: every name a claim uses exists (its paper
and item among the spec's citations, its artefact among its figures, its metrics and parameters
in the spec it reads). Other specs a claim reads are read as plain YAML (two specs may read each
other)."""
from crosstalk import userfiles
from crosstalk.errors import InputError


def _other_spec(experiments_dir, name, path, field):
    other = experiments_dir / f"{name}.yaml"
    if "/" in name or not other.is_file():
        raise InputError(path, field, f"unknown experiment {name!r}")
    return userfiles.load_yaml(other, "spec")


def _names(data):
    return ({m["name"] for m in data.get("metrics", [])},
            set(data.get("profiles", {}).get("quick", {}).get("parameters", {})) | {"repeat"})


def _check_operand(op, field, path, data, experiments_dir):
    if "ratio" in op:
        for i, part in enumerate(op["ratio"]):
            _check_operand(part, f"{field}.ratio[{i}]", path, data, experiments_dir)
        return
    if "spread" in op:
        _check_operand(op["spread"], f"{field}.spread", path, data, experiments_dir)
        source = data if op["spread"].get("experiment", data["name"]) == data["name"] else \
            _other_spec(experiments_dir, op["spread"]["experiment"], path, f"{field}.spread.experiment")
        if op["over"] not in _names(source)[1]:
            raise InputError(path, f"{field}.over", f"unknown parameter {op['over']!r} of {source['name']}")
        return
    if "metric" not in op:
        return
    source = data
    if "experiment" in op and op["experiment"] != data["name"]:
        source = _other_spec(experiments_dir, op["experiment"], path, f"{field}.experiment")
    metrics, params = _names(source)
    for metric in op["metric"] if isinstance(op["metric"], list) else [op["metric"]]:
        if metric not in metrics:
            raise InputError(path, f"{field}.metric", f"unknown metric {metric!r} of {source['name']}")
    for name in op.get("select", {}):
        if name not in params:
            raise InputError(path, f"{field}.select", f"unknown parameter {name!r} of {source['name']}")


#: Not a spec parameter but selectable like one: the case's programming environment (its MPI).
CASE_ENVIRON = "environ"


def check_claims(path, data, experiments_dir):
    items = {c["paper"]: set(c["items"]) for c in data["citations"]}
    figures = {f["id"] for f in data.get("figures", [])}
    _, params = _names(data)
    seen = set()
    for i, claim in enumerate(data.get("claims", [])):
        where = f"claims[{i}]"
        if claim["id"] in seen:
            raise InputError(path, f"{where}.id", f"{claim['id']!r} is listed twice")
        seen.add(claim["id"])
        if claim["paper"] not in items:
            raise InputError(path, f"{where}.paper", f"{claim['paper']!r} is not one of the spec's citations")
        if claim["item"] not in items[claim["paper"]]:
            raise InputError(path, f"{where}.item", f"{claim['item']!r} is not among the items cited from "
                             f"{claim['paper']} ({', '.join(sorted(items[claim['paper']]))})")
        if claim.get("artefact") is not None and claim["artefact"] not in figures:
            raise InputError(path, f"{where}.artefact", f"unknown figure {claim['artefact']!r}")
        test = claim["test"]
        for name in [*test.get("select", {}), *test.get("group_by", []), *test.get("x_zero", {})]:
            if name not in params and name != CASE_ENVIRON:
                raise InputError(path, f"{where}.test", f"unknown parameter {name!r}")
        if "over" in test and test["over"] not in params:
            raise InputError(path, f"{where}.test.over", f"unknown parameter {test['over']!r}")
        if test["kind"] == "fit" and test["model"] == "linear-loss" and not {"x", "y"} <= set(test):
            raise InputError(path, f"{where}.test", "the linear-loss fit needs x and y")
        for key in ("a", "b", "num", "den", "value", "x", "y"):
            if key in test:
                _check_operand(test[key], f"{where}.test.{key}", path, data, experiments_dir)
        band = test.get("band")
        if band and None not in band and band[0] >= band[1]:
            raise InputError(path, f"{where}.test.band", f"{band}: the lower bound must be below the upper")
    kinds = {c["id"]: c.get("kind", "paper") for c in data.get("claims", [])}
    for i, claim in enumerate(data.get("claims", [])):
        control = claim.get("controlled_by")
        if control is None:
            continue
        if kinds.get(control) != "check" or control == claim["id"]:
            raise InputError(path, f"claims[{i}].controlled_by",
                             f"{control!r} is not another claim of kind check in this spec")
