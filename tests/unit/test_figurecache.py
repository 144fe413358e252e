"""One job draws the report's figures and redraws only those whose rows changed; a figure drawn
from its experiment's rows alone is the figure drawn from the whole table (so the cache cannot
change what the report shows). Real drawings of the shipped example runs.

Every figure is drawn once per module (``drawn``: by ``draw_figures``, one after the other in this
process); the tests that start from those drawings work on a copy of them."""
import shutil

import pandas as pd
import pytest
from example_figures import GROUP

from crosstalk.analysis import figurecache
from crosstalk.analysis.workflow import figure_experiments, figure_ids

pytestmark = pytest.mark.xdist_group(GROUP)     # example_figures made once (tests/example_figures.py)


@pytest.fixture(scope="module")
def perf(examples_perf):
    """The shipped examples' rows (tests/example_figures.py)."""
    return examples_perf


def outputs(out_dir):
    return {p.name: p.read_bytes() for p in sorted(out_dir.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def drawn(perf, tmp_path_factory):
    """Every figure drawn from the whole table into a directory of its own (its store in
    ``.cache``): the ids ``draw_figures`` drew and the files it wrote. Drawing them all takes about
    half a minute, so the tests share these drawings and change only their own copies."""
    out = tmp_path_factory.mktemp("drawn")
    drew = figurecache.draw_figures(perf, [], out, figure_ids())
    return {"dir": out, "drew": drew, "files": outputs(out)}


def copy_of(drawn, path):
    """``path`` (the test's own) made a copy of the drawn figures and their store."""
    shutil.copytree(drawn["dir"], path, dirs_exist_ok=True)
    return path


def test_every_figure_reads_only_the_experiment_its_spec_lists(drawn, example_figures):
    """Drawn from all rows (``example_figures``, as ``draw`` draws them) and from its experiment's
    rows (``drawn``: draw_figures draws each from ``figure_rows`` of its experiment): same caption,
    same PNG bytes (no SVG: it is not compared)."""
    for fig in figure_ids():
        whole = example_figures[fig]
        alone = (drawn["dir"] / f"{fig}.caption.txt").read_text().removesuffix("\n")
        assert alone == whole.caption, fig
        assert (drawn["dir"] / f"{fig}.png").read_bytes() == whole.png, fig


def test_a_second_draw_keeps_every_figure_and_writes_the_same_files(perf, drawn, tmp_path):
    ids = figure_ids()
    assert sorted(drawn["drew"]) == sorted(ids)
    first = drawn["files"]
    assert len(first) == 2 * len(ids)           # PNG and caption: SVG only when asked for
    copy_of(drawn, tmp_path)
    for path in tmp_path.iterdir():      # Snakemake removes a job's outputs before it runs
        if path.is_file():
            path.unlink()
    assert figurecache.draw_figures(perf, [], tmp_path, ids) == []
    assert outputs(tmp_path) == first


def test_changed_rows_redraw_only_their_experiments_figures(perf, drawn, tmp_path):
    ids = figure_ids()
    copy_of(drawn, tmp_path)                            # every figure drawn from ``perf``
    stream = perf.experiment == "stream"
    changed = pd.concat([perf[~stream], perf[stream].assign(value=perf[stream].value * 2)])
    redrawn = figurecache.draw_figures(changed, [], tmp_path, ids)
    assert redrawn == [f for f, exp in figure_experiments().items() if exp == "stream"]
    assert redrawn   # the stream spec lists a figure: the check above is not vacuous


def test_a_stored_drawing_cut_short_is_drawn_again(perf, drawn, tmp_path):
    ids = figure_ids()[:2]
    copy_of(drawn, tmp_path)
    (png,) = (tmp_path / ".cache" / ids[0]).glob("*.png")
    png.write_bytes(png.read_bytes()[:-100])           # a copy of the store that stopped
    assert figurecache.draw_figures(perf, [], tmp_path, ids) == [ids[0]]
    assert png.read_bytes().endswith(figurecache.PNG_TAIL)


def test_a_figure_whose_drawing_was_interrupted_is_drawn_again(perf, drawn, tmp_path):
    ids = figure_ids()[:2]
    copy_of(drawn, tmp_path)                            # ids drawn from ``perf``
    (done,) = (tmp_path / ".cache" / ids[0]).glob("*.done")
    done.unlink()                                      # what an interrupted drawing leaves
    assert figurecache.draw_figures(perf, [], tmp_path, ids) == [ids[0]]


def test_forked_workers_draw_the_same_files_as_one_process(perf, drawn, tmp_path):
    """The figures a report redraws are split over forked workers: the same PNG, SVG and caption
    bytes as drawn one after the other in this process (``drawn``)."""
    ids = figure_ids()[:4]
    assert set(ids) <= set(drawn["drew"])
    serial = {name: data for name, data in drawn["files"].items()
              if name in {f"{fig}.{suffix}" for fig in ids for suffix in figurecache.SUFFIXES}}
    assert sorted(figurecache.draw_figures(perf, [], tmp_path / "forked", ids, workers=2)) == sorted(ids)
    assert outputs(tmp_path / "forked") == serial


def test_a_report_of_other_systems_and_back_draws_nothing_twice(perf, tmp_path):
    """The store keeps a drawing by its rows: a report of one system, then of another, then of the
    first again redraws only what the second changed."""
    ids = figure_ids()[:3]
    store, figures = tmp_path / ".figures", tmp_path / "figures"
    one = perf[perf.system == perf.system.iloc[0]]
    both = pd.concat([one, one.assign(system="sysB", value=one.value * 3)])
    assert sorted(figurecache.draw_figures(both, [], figures, ids, store=store)) == sorted(ids)
    first = outputs(figures)
    assert sorted(figurecache.draw_figures(both, ["sysB"], figures, ids, store=store)) == sorted(ids)
    assert figurecache.draw_figures(both, [], figures, ids, store=store) == []
    assert outputs(figures) == first


def test_a_drawing_not_shown_is_removed_once_old(perf, drawn, tmp_path, monkeypatch):
    ids = figure_ids()[:1]
    copy_of(drawn, tmp_path)                            # ids drawn from ``perf``
    stream = perf.assign(value=perf.value * 2)
    monkeypatch.setattr(figurecache, "UNUSED_GRACE_S", 0)
    figurecache.draw_figures(stream, [], tmp_path, ids)
    assert len(list((tmp_path / ".cache" / ids[0]).glob("*.done"))) == 1    # only the one shown


def test_svg_only_when_asked_for_and_a_drawing_kept_without_it_is_drawn_again(perf, drawn, tmp_path):
    ids = figure_ids()[:2]
    copy_of(drawn, tmp_path)                            # ids drawn from ``perf``, without SVG
    figurecache.draw_figures(perf, [], tmp_path, ids)
    assert not list(tmp_path.glob("*.svg"))
    # asked for SVG: the kept drawings lack it, so both are drawn again, with the same PNG bytes
    png = {fig: (tmp_path / f"{fig}.png").read_bytes() for fig in ids}
    assert sorted(figurecache.draw_figures(perf, [], tmp_path, ids, svg=True)) == sorted(ids)
    assert all((tmp_path / f"{fig}.svg").read_bytes().startswith(b"<?xml") for fig in ids)
    assert {fig: (tmp_path / f"{fig}.png").read_bytes() for fig in ids} == png
    # the drawings with SVG serve a report without it (and no older SVG is left shown)
    assert figurecache.draw_figures(perf, [], tmp_path, ids) == []
    assert not list(tmp_path.glob("*.svg"))
    assert figurecache.draw_figures(perf, [], tmp_path, ids, svg=True) == []


def test_a_figures_key_covers_the_specs_whose_claims_it_draws():
    names = {p.name for p in figurecache.drawing_inputs()}
    assert {"core-mapping.yaml", "energy.yaml"} <= names and "judge.py" in names


def test_another_user_platform_in_the_report_redraws_with_its_colours(perf, tmp_path):
    """Every figure colours the report's user platforms alike (style.assign_colours): a drawing is
    kept for the same platforms only, even where the figure's own rows did not change."""
    fig = "stream_triad"
    assert figure_experiments()[fig] == "stream"
    stream = perf[perf.experiment == "stream"].assign(origin="user", platform="site@00000001")
    elsewhere = perf[perf.experiment == "energy"].assign(origin="user", platform="site@00000002")
    assert not stream.empty and not elsewhere.empty
    assert figurecache.draw_figures(stream, [], tmp_path, [fig]) == [fig]
    assert figurecache.draw_figures(stream, [], tmp_path, [fig]) == []
    assert figurecache.draw_figures(pd.concat([stream, elsewhere]), [], tmp_path, [fig]) == [fig]
