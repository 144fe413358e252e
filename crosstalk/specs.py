"""Experiment specs: ``experiments/<name>.yaml``, validated against ``experiments/schema.json``."""
import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from crosstalk import REPO_ROOT
from crosstalk.bibliography import bibliography
from crosstalk.errors import InputError

EXPERIMENTS_DIR = REPO_ROOT / "experiments"
SCHEMA_PATH = EXPERIMENTS_DIR / "schema.json"
PROFILES = ("quick", "full")
PROFILE_ENV = "CROSSTALK_PROFILE"


def current_profile():
    """The profile chosen for this run (``crosstalk run --profile`` sets the variable)."""
    profile = os.environ.get(PROFILE_ENV, "quick")
    if profile not in PROFILES:
        raise InputError(PROFILE_ENV, None, f"unknown profile {profile!r} (choose {', '.join(PROFILES)})")
    return profile


@dataclass(frozen=True)
class Spec:
    path: Path
    data: dict

    @property
    def name(self):
        return self.data["name"]

    @property
    def sha256(self):
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def profile(self, profile=None):
        return self.data["profiles"][profile or current_profile()]

    def parameter(self, name, profile=None):
        """Values of one swept parameter in a profile (used for ReFrame ``parameter()``)."""
        params = self.profile(profile)["parameters"]
        if name not in params:
            raise InputError(self.path, f"profiles.{profile or current_profile()}.parameters.{name}",
                             "missing")
        return list(params[name])

    def setting(self, name, profile=None, default=None):
        return self.profile(profile).get("settings", {}).get(name, default)

    def repeats(self, profile=None):
        return self.profile(profile).get("repeats", 1)

    def sweep(self, profile=None):
        """Every combination of the profile's parameters, as dicts."""
        params = self.profile(profile)["parameters"]
        names = sorted(params)
        return [dict(zip(names, combo)) for combo in itertools.product(*(params[n] for n in names))]

    def metric(self, name):
        for metric in self.data["metrics"]:
            if metric["name"] == name:
                return metric
        raise InputError(self.path, "metrics", f"no metric named {name!r}")

    def instrument(self, name):
        for inst in self.data["instruments"]:
            if inst["name"] == name:
                return inst
        raise InputError(self.path, "instruments", f"no instrument named {name!r}")


def _field(error):
    path = ".".join(str(p) for p in error.absolute_path)
    return path or "(top level)"


def load_spec_file(path):
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InputError(path, None, "no such spec file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise InputError(path, f"line {mark.line + 1}" if mark else None,
                         f"invalid YAML: {getattr(err, 'problem', err)}") from None
    if not isinstance(data, dict):
        raise InputError(path, None, "a spec must be a mapping")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    errors = list(validator.iter_errors(data))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        raise InputError(path, _field(err), err.message)
    if data["name"] != path.stem:
        raise InputError(path, "name", f"{data['name']!r} must equal the file name {path.stem!r}")
    papers = bibliography()
    for i, cite in enumerate(data["citations"]):
        if cite["paper"] not in papers:
            raise InputError(path, f"citations.{i}.paper",
                             f"unknown paper {cite['paper']!r} (known: {', '.join(papers)})")
    metric_names = {m["name"] for m in data["metrics"]}
    for i, fig in enumerate(data.get("figures", [])):
        for metric in fig.get("metrics", []):
            if metric not in metric_names:
                raise InputError(path, f"figures.{i}.metrics", f"unknown metric {metric!r}")
    parameters = set(data["profiles"]["quick"]["parameters"])
    for i, check in enumerate(data.get("portable_checks", [])):
        for key in ("metric", "above"):
            if isinstance(check[key], str) and check[key] not in metric_names:
                raise InputError(path, f"portable_checks.{i}.{key}", f"unknown metric {check[key]!r}")
        unknown = set(check.get("when", {})) - parameters
        if unknown:
            raise InputError(path, f"portable_checks.{i}.when", f"unknown parameter {sorted(unknown)[0]!r}")
    for profile in PROFILES:
        if set(data["profiles"][profile]["parameters"]) != set(data["profiles"]["quick"]["parameters"]):
            raise InputError(path, f"profiles.{profile}.parameters",
                             "quick and full must sweep the same parameters")
    return Spec(path.resolve(), data)


@lru_cache(maxsize=None)
def load_spec(name):
    """Load ``experiments/<name>.yaml``."""
    return load_spec_file(EXPERIMENTS_DIR / f"{name}.yaml")


def all_specs():
    return [load_spec(p.stem) for p in sorted(EXPERIMENTS_DIR.glob("*.yaml"))]
