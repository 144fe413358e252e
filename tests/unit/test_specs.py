"""Experiment specs: every shipped spec validates; bad specs give one line naming file and field."""
import pytest
import yaml

from xt_testing import REPO
from crosstalk.errors import InputError
from crosstalk.specs import all_specs, load_spec_file

SHIPPED = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_spec_validates(name):
    spec = load_spec_file(REPO / "experiments" / f"{name}.yaml")
    assert spec.name == name
    for profile in ("quick", "full"):
        assert spec.sweep(profile), f"{name}: {profile} sweeps nothing"
    for cite in spec.data["citations"]:
        assert (REPO.parent / "shared" / "seeds" / cite["seed"]).exists(), cite["seed"]


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
    (lambda d: d["metrics"][0].update(better="more"), "metrics.0.better"),
    (lambda d: d["profiles"]["quick"]["parameters"].update(threads=[]), "profiles.quick.parameters.threads"),
    (lambda d: d["citations"][0].update(seed="paper.pdf"), "citations.0.seed"),
    (lambda d: d.update(name="other"), "name"),
    (lambda d: d["figures"][0].update(metrics=["nope"]), "figures.0.metrics"),
    (lambda d: d["profiles"]["full"]["parameters"].update(extra=[1]), "profiles.full.parameters"),
])
def test_bad_spec_names_file_and_field(tmp_path, change, field):
    path = write_variant(tmp_path, change)
    with pytest.raises(InputError) as err:
        load_spec_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {field}:"), message
    assert "\n" not in message


def test_yaml_error_names_line(tmp_path):
    path = tmp_path / "stream.yaml"
    path.write_text("name: stream\ntitle: [unclosed\n")
    with pytest.raises(InputError, match=rf"{path}: line \d+: invalid YAML"):
        load_spec_file(path)


def test_all_specs_load():
    assert {s.name for s in all_specs()} == set(SHIPPED)
