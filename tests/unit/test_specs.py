"""Experiment specs: every shipped spec validates; bad specs give one line naming file and field."""
import re

import pytest
import yaml
from xt_testing import REPO

from crosstalk.bibliography import bibliography, citation, short_citation
from crosstalk.errors import InputError
from crosstalk.specs import all_specs, load_spec_file
from crosstalk.userfiles import loads_yaml

SHIPPED = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_spec_validates(name):
    spec = load_spec_file(REPO / "experiments" / f"{name}.yaml")
    assert spec.name == name
    for profile in ("quick", "full"):
        assert spec.sweep(profile), f"{name}: {profile} sweeps nothing"
    for cite in spec.data["citations"]:
        assert cite["paper"] in bibliography(), cite["paper"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_spec_has_a_test_module(name):
    assert (REPO / "reframe-tests" / f"{name.replace('-', '_')}.py").exists()


def write_variant(tmp_path, change, name="stream"):
    data = yaml.safe_load((REPO / "experiments" / f"{name}.yaml").read_text())
    change(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("metrics"), "(top level)"),
    (lambda d: d["metrics"][0].update(better="more"), "metrics[0].better"),
    (lambda d: d["profiles"]["quick"]["parameters"].update(threads=[]), "profiles.quick.parameters.threads"),
    (lambda d: d["citations"][0].update(paper="nobody1999"), "citations[0].paper"),
    (lambda d: d["citations"][0].update(seed="paper.txt"), "citations[0]"),
    (lambda d: d.update(name="other"), "name"),
    (lambda d: d["figures"][0].update(metrics=["nope"]), "figures[0].metrics"),
    (lambda d: d.update(portable_checks=[{"name": "x", "metric": "nope", "above": 1, "why": "y"}]),
     "portable_checks[0].metric"),
    (lambda d: d.update(portable_checks=[{"name": "x", "metric": "triad_bw", "above": "nope",
                                          "why": "y"}]), "portable_checks[0].above"),
    (lambda d: d.update(portable_checks=[{"name": "x", "metric": "triad_bw", "above": 1, "why": "y",
                                          "when": {"cores": 2}}]), "portable_checks[0].when"),
    (lambda d: d.update(portable_checks=[{"name": "x", "metric": "triad_bw", "above": 1}]),
     "portable_checks[0]"),
    (lambda d: d["profiles"]["full"]["parameters"].update(extra=[1]), "profiles.full.parameters"),
    # settings: the spec declares them; a profile sets declared ones of their type, all without a default
    (lambda d: d["profiles"]["quick"]["settings"].update(ntime=4), "profiles.quick.settings.ntime"),
    (lambda d: d["profiles"]["full"]["settings"].update(ntimes="20"), "profiles.full.settings.ntimes"),
    (lambda d: d["profiles"]["full"]["settings"].pop("ntimes"), "profiles.full.settings"),
    (lambda d: d["settings"]["rounds"].update(default="three"), "settings.rounds.default"),
    (lambda d: d["settings"]["ntimes"].pop("description"), "settings.ntimes"),
])
def test_bad_spec_names_file_and_field(tmp_path, change, field):
    path = write_variant(tmp_path, change)
    with pytest.raises(InputError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {field}:"), message
    assert "\n" not in message


def test_a_setting_comes_from_the_profile_or_its_declared_default(tmp_path):
    path = write_variant(tmp_path, lambda d: d["profiles"]["quick"]["settings"].pop("rounds"))
    spec = load_spec_file(path)
    assert spec.setting("rounds", "quick") == spec.data["settings"]["rounds"]["default"]
    assert spec.setting("ntimes", "full") == spec.data["profiles"]["full"]["settings"]["ntimes"]
    with pytest.raises(KeyError, match="not declared"):
        spec.setting("ntime", "quick")          # a test module's misspelling fails at once


@pytest.mark.parametrize("name", SHIPPED)
def test_every_setting_a_test_module_reads_is_declared(name):
    """The code reads the spec's settings without defaults of its own: each one it names is
    declared (read from the module's text, as the names are literals)."""
    spec = load_spec_file(REPO / "experiments" / f"{name}.yaml")
    module = (REPO / "reframe-tests" / f"{name.replace('-', '_')}.py").read_text()
    read = set(re.findall(r'self\.setting\("([a-z_0-9]+)"\)', module))
    assert read <= set(spec.data.get("settings", {})), read - set(spec.data.get("settings", {}))


def test_yaml_error_names_line(tmp_path):
    path = tmp_path / "stream.yaml"
    path.write_text("name: stream\ntitle: [unclosed\n")
    with pytest.raises(InputError, match=rf"{path}: line \d+: invalid YAML"):
        load_spec_file(path)


def test_the_fast_parser_reads_every_spec_as_the_pure_one_does():
    """Specs are parsed with libyaml where PyYAML has it; what they hold must not depend on it."""
    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML here was built without libyaml: specs are read by the pure parser alone")
    for path in sorted((REPO / "experiments").glob("*.yaml")):
        text = path.read_text()
        assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text), path.name
        assert loads_yaml(text, path) == yaml.safe_load(text), path.name


def test_a_yaml_error_reads_as_the_pure_parser_words_it(tmp_path):
    path = tmp_path / "stream.yaml"
    path.write_text("name: stream\nbad: a: b\n")
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load(path.read_text())
    with pytest.raises(InputError) as ours:
        load_spec_file(path)
    assert pure.value.problem in str(ours.value)


def test_all_specs_load():
    assert {s.name for s in all_specs()} == set(SHIPPED)


def test_bibliography_entries_are_complete():
    papers = bibliography()
    assert len(papers) == 5
    for key, paper in papers.items():
        assert paper["authors"] and paper["title"] and paper["venue"], key
        # a year, or a note saying why there is none
        assert isinstance(paper["year"], int) or paper.get("note"), key
        assert citation(key).startswith(paper["authors"][0]), key


def test_citation_formats():
    assert short_citation("groves2017") == "Groves 2017"
    assert citation("chunduri2019") == (
        "Sudheer Chunduri, Taylor Groves, Peter Mendygral, Brian Austin, Jacob Balma, Krishna Kandalla, "
        "Kalyan Kumaran, Glenn Lockwood, Scott Parker, Steven Warren, Nathan Wichmann and Nicholas Wright "
        "(2019). GPCNeT: Designing a Benchmark Suite for Inducing and Measuring Contention in HPC Networks. "
        "International Conference for High Performance Computing, Networking, Storage and Analysis (SC '19), "
        "ACM. https://doi.org/10.1145/3295500.3356215.")
    assert "(n.d.)" in citation("casas-bronevetsky")
    assert "SAND2012-1750." in citation("sand2012")
    with pytest.raises(InputError, match="no paper 'nobody1999'"):
        citation("nobody1999")


def test_bad_bibliography_names_file_and_field(tmp_path):
    path = tmp_path / "bibliography.yaml"
    path.write_text("x2020: {kind: article, authors: [A], title: T, venue: V, year: 2020, short: X, doi: nope}\n")
    with pytest.raises(InputError) as err:
        bibliography(path)
    assert str(err.value).startswith(f"{path}: x2020.doi:") and "\n" not in str(err.value)


def test_environments_default_first_in_quick_all_in_full_unless_the_spec_says():
    """Which MPIs an experiment runs under: a second MPI doubles the quick suite, so quick uses the
    partition's first unless the profile asks (RMA-MT compares MPIs); STREAM makes no MPI call."""
    specs = {s.name: s for s in all_specs()}
    assert specs["congestion"].environments("quick")[0] == "first"
    assert specs["congestion"].environments("full")[0] == "all"
    assert specs["rma-mt"].environments("quick")[0] == "all"
    which, why = specs["stream"].environments("full")
    assert which == "first" and "MPI" in why


def test_an_unknown_environments_choice_is_refused(tmp_path):
    path = write_variant(tmp_path, lambda d: d["profiles"]["quick"].update(environments="both"))
    with pytest.raises(InputError, match=r"profiles\.quick\.environments"):
        load_spec_file(path)
