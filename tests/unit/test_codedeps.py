"""The code a rule runs, read from the import statements (crosstalk.codedeps): the workflow's
code inputs and the figure cache's key are derived from it instead of a hand-kept list."""
import pytest

from crosstalk import REPO_ROOT, codedeps


@pytest.fixture
def tree(tmp_path, monkeypatch):
    pkg = tmp_path / "crosstalk"
    (pkg / "c").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "import json\n\ndef f():\n    import crosstalk.b  # inside a function: still a dependency\n",
        "b.py": "from crosstalk.c import d\n",
        "c/__init__.py": "",
        "c/d.py": "from crosstalk import errors_like\n",
        "errors_like.py": "",
        "unrelated.py": "from crosstalk import a\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    monkeypatch.setattr(codedeps, "REPO_ROOT", tmp_path)
    codedeps._imported_by.cache_clear()
    yield lambda paths: sorted(str(p.relative_to(pkg)) for p in paths)
    codedeps._imported_by.cache_clear()


def test_transitive_imports_function_level_and_submodules_by_name(tree):
    assert tree(codedeps.code_files("crosstalk.a")) == [
        "__init__.py", "a.py", "b.py", "c/__init__.py", "c/d.py", "errors_like.py"]


def test_a_package_means_all_of_its_modules(tree):
    assert tree(codedeps.code_files("crosstalk.c")) == ["__init__.py", "c/__init__.py", "c/d.py", "errors_like.py"]


def test_an_unknown_module_is_refused(tree):
    with pytest.raises(ValueError, match="no crosstalk module crosstalk.nope"):
        codedeps.code_files("crosstalk.nope")


def test_the_report_depends_on_the_claims_it_judges_not_on_the_runner():
    files = {str(p.relative_to(REPO_ROOT)) for p in codedeps.code_files("crosstalk.analysis.report")}
    assert {"crosstalk/analysis/report.py", "crosstalk/claims/judge.py", "crosstalk/figures/casas.py"} <= files
    assert "crosstalk/run/runner.py" not in files
