"""Experiment specs: ``experiments/<name>.yaml``, validated against ``experiments/schema.json``."""
import hashlib
import itertools
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from crosstalk import REPO_ROOT, userfiles
from crosstalk.bibliography import BIBLIOGRAPHY_PATH, bibliography
from crosstalk.claimcheck import check_claims
from crosstalk.errors import InputError
from crosstalk.site.machines import all_machines
from crosstalk.validation import first_error, validate

EXPERIMENTS_DIR = REPO_ROOT / "experiments"
SCHEMA_PATH = EXPERIMENTS_DIR / "schema.json"
PROFILES = ("quick", "full")
PROFILE_ENV = "CROSSTALK_PROFILE"
SPECS_DIR_ENV = "CROSSTALK_SPECS_DIR"


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
        return hashlib.sha256(userfiles.read_bytes(self.path, "spec")).hexdigest()

    def profile(self, profile=None):
        return self.data["profiles"][profile or current_profile()]

    def parameter(self, name, profile=None):
        """Values of one swept parameter in a profile (used for ReFrame ``parameter()``)."""
        params = self.profile(profile)["parameters"]
        if name not in params:
            raise InputError(self.path, f"profiles.{profile or current_profile()}.parameters.{name}",
                             "missing")
        return list(params[name])

    def setting(self, name, profile=None):
        """A setting's value in a profile, or its declared default (the spec's ``settings``
        declares every setting its test reads: a name it does not declare is a programming error)."""
        declared = self.data.get("settings", {})
        if name not in declared:
            raise KeyError(f"{self.path}: setting {name!r} is not declared in the spec's settings")
        return self.profile(profile).get("settings", {}).get(name, declared[name].get("default"))

    def environments(self, profile=None):
        """(``all`` or ``first``, why): the programming environments (MPIs) of a partition this
        experiment runs under. ``one_environment`` in the spec pins it to the first; otherwise the
        profile's ``environments``, by default ``all`` in full and ``first`` in quick (a second MPI
        doubles the quick suite; a spec whose claim compares MPIs asks for ``all``)."""
        profile = profile or current_profile()
        if self.data.get("one_environment"):
            return "first", self.data["one_environment"]
        chosen = self.profile(profile).get("environments", "all" if profile == "full" else "first")
        return chosen, f"the {profile} profile runs {self.name} under the first environment only"

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


#: Parameter and setting values go on job command lines (ReFrame writes them into shell scripts):
#: words only, no shell metacharacters or whitespace.
_WORD = re.compile(r"^[A-Za-z0-9_.,:+=@%/-]*$")
#: Parameter and setting names (parameters become attributes of the ReFrame tests).
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _check_words(path, data):
    """Every parameter and setting of every profile is a plain word (InputError otherwise)."""
    for profile in PROFILES:
        for group in ("parameters", "settings"):
            where = f"profiles.{profile}.{group}"
            for name, value in data["profiles"][profile].get(group, {}).items():
                if not _KEY.match(name):
                    raise InputError(path, where, f"name {name!r}: use lower-case letters, digits and "
                                     "'_', starting with a letter")
                values = value if group == "parameters" else [value]
                for i, item in enumerate(values):
                    if isinstance(item, str) and not _WORD.match(item):
                        raise InputError(path, f"{where}.{name}" + (f"[{i}]" if group == "parameters" else ""),
                                         f"{item!r}: shell metacharacters or whitespace are not allowed "
                                         "(the value goes on a job's command line)")
    for i, fig in enumerate(data.get("figures", [])):
        name = fig.get("paper_data")
        if name is not None and ("/" in name or name.startswith(".")
                                 or not (BIBLIOGRAPHY_PATH.parent / name).is_file()):
            raise InputError(path, f"figures[{i}].paper_data", f"{name!r}: not the file name of a "
                             f"table in {BIBLIOGRAPHY_PATH.parent}")


def _check_settings(path, data):
    """Every profile sets declared settings only, each of its declared type, and every setting
    without a default (InputError otherwise): a misspelt key never falls back to a hidden default."""
    declared = data.get("settings", {})
    for name, decl in declared.items():
        if "default" in decl:
            _check_setting_type(path, f"settings.{name}.default", decl, decl["default"])
    for profile in PROFILES:
        where = f"profiles.{profile}.settings"
        given = data["profiles"][profile].get("settings", {})
        for name, value in given.items():
            if name not in declared:
                raise InputError(path, f"{where}.{name}",
                                 f"unknown setting (declared: {', '.join(declared) or 'none'})")
            _check_setting_type(path, f"{where}.{name}", declared[name], value)
        missing = [name for name, decl in declared.items() if "default" not in decl and name not in given]
        if missing:
            raise InputError(path, where, f"{missing[0]!r} has no default: set it here")


def _check_setting_type(path, where, decl, value):
    if first_error(value, {"type": decl["type"]}) is not None:
        raise InputError(path, where, f"{value!r} is not of the declared type {decl['type']}")


#: Cases one profile may ask for (the shipped full profiles ask for at most a few hundred): a typo
#: such as ``repeats: 1000000000`` is refused before ReFrame tries to generate them.
MAX_CASES = 10_000


def load_spec_file(path):
    path = Path(path)
    try:
        data = userfiles.load_yaml(path, "spec")
    except userfiles.MissingFile:
        raise InputError(path, None, "no such spec file") from None
    if not isinstance(data, dict):
        raise InputError(path, None, "a spec must be a mapping")
    validate(data, SCHEMA_PATH, path)
    _check_words(path, data)
    _check_settings(path, data)
    for name, profile in data["profiles"].items():
        cases = math.prod(len(v) for v in profile["parameters"].values()) * profile.get("repeats", 1)
        if cases > MAX_CASES:
            raise InputError(path, f"profiles.{name}", f"{cases} cases (parameter values x repeats); "
                                                        f"at most {MAX_CASES} per profile")
    if data["name"] != path.stem:
        raise InputError(path, "name", f"{data['name']!r} must equal the file name {path.stem!r}")
    if "like" in data and data["like"] not in all_machines():
        raise InputError(path, "like",
                         f"{data['like']!r} is not a known machine (crosstalk vcluster machines lists them)")
    papers = bibliography()
    for i, cite in enumerate(data["citations"]):
        if cite["paper"] not in papers:
            raise InputError(path, f"citations[{i}].paper",
                             f"unknown paper {cite['paper']!r} (known: {', '.join(papers)})")
    metric_names = {m["name"] for m in data["metrics"]}
    for i, fig in enumerate(data.get("figures", [])):
        for metric in fig.get("metrics", []):
            if metric not in metric_names:
                raise InputError(path, f"figures[{i}].metrics", f"unknown metric {metric!r}")
    parameters = set(data["profiles"]["quick"]["parameters"])
    for i, check in enumerate(data.get("portable_checks", [])):
        for key in ("metric", "above"):
            if isinstance(check[key], str) and check[key] not in metric_names:
                raise InputError(path, f"portable_checks[{i}].{key}", f"unknown metric {check[key]!r}")
        unknown = set(check.get("when", {})) - parameters
        if unknown:
            raise InputError(path, f"portable_checks[{i}].when", f"unknown parameter {sorted(unknown)[0]!r}")
    check_claims(path, data, EXPERIMENTS_DIR)
    for profile in PROFILES:
        if set(data["profiles"][profile]["parameters"]) != set(data["profiles"]["quick"]["parameters"]):
            raise InputError(path, f"profiles.{profile}.parameters",
                             "quick and full must sweep the same parameters")
    return Spec(path.resolve(), data)


def site_specs_dir():
    """``CROSSTALK_SPECS_DIR``: a directory of site specs that replace shipped ones of the same name
    (a longer full profile, other settings); the run's provenance records which file was used."""
    text = os.environ.get(SPECS_DIR_ENV)
    if not text:
        return None
    path = Path(text)
    if not path.is_dir():
        raise InputError(SPECS_DIR_ENV, None, f"{text!r} is not a directory")
    return path


@lru_cache(maxsize=None)
def load_spec(name):
    """Load ``<name>.yaml`` from the site specs directory if it has one, else from experiments/."""
    site = site_specs_dir()
    if site is not None and (site / f"{name}.yaml").is_file():
        return load_spec_file(site / f"{name}.yaml")
    return load_spec_file(EXPERIMENTS_DIR / f"{name}.yaml")


def all_specs():
    return [load_spec(p.stem) for p in sorted(EXPERIMENTS_DIR.glob("*.yaml"))]


def better_direction():
    """``better(experiment, metric)``: 'higher' or 'lower', as the experiment's spec says; 'higher'
    for a metric no spec declares (a plain ReFrame run's performance variables)."""
    index = {(s.name, m["name"]): m["better"] for s in all_specs() for m in s.data["metrics"]}
    return lambda experiment, metric: index.get((experiment, metric), "higher")
