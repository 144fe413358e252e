"""The figure check (tests/figure_check.py): every registered figure, drawn from the shipped examples
and from the same rows relabelled as a user's platform (so the user-against-example styling is
drawn), passes it; and each rule is shown to fail on a small figure made to break it, so the check
is tested too."""
import pandas as pd
import pytest
from example_figures import GROUP
from figure_check import (
    MAX_SERIES,
    legend_over_data,
    paper_numbers_missing,
    problems,
    range_set_by_another,
    series_without_n,
    text_outside,
    tick_labels_overlap,
    too_many_series,
)

from crosstalk.figures import FIGURES, plt

pytestmark = pytest.mark.xdist_group(GROUP)     # example_figures made once (tests/example_figures.py)

# -- every registered figure --------------------------------------------------------------------

@pytest.fixture(scope="module")
def user_and_examples(examples_perf):
    """The shipped examples' rows and the same rows relabelled as a user's platform."""
    user = examples_perf.assign(platform=examples_perf["platform"].str.replace(" (example)", "", regex=False)
                                + "-mine", origin="user", system="mine")
    return pd.concat([examples_perf, user], ignore_index=True)


@pytest.mark.parametrize("which", ["examples", "user and examples"])
@pytest.mark.parametrize("fig_id", sorted(FIGURES))
def test_every_figure_passes_the_check(user_and_examples, example_figures, which, fig_id):
    if which == "examples":          # drawn and checked once for this module and test_figurecache
        assert example_figures[fig_id].problems == []
        assert example_figures[fig_id].caption
        return
    fig, caption = FIGURES[fig_id](user_and_examples, None)
    try:
        assert problems(fig_id, fig) == []
        assert caption
    finally:
        plt.close(fig)


# -- the check fails on figures made to break it ------------------------------------------------

def test_more_than_eight_series_in_a_panel_fail():
    fig, ax = plt.subplots()
    for i in range(MAX_SERIES + 1):
        ax.plot([0, 1], [i, i], label=f"s{i}")
    assert too_many_series(fig)
    plt.close(fig)
    fig, ax = plt.subplots()
    for i in range(MAX_SERIES):
        ax.plot([0, 1], [i, i], label=f"s{i}")
    assert not too_many_series(fig)
    plt.close(fig)


def test_a_legend_over_data_points_fails():
    fig, ax = plt.subplots()
    ax.plot([0, 0.5, 1], [0, 0.5, 1], marker="o", label="data")
    ax.legend(loc="center")
    assert legend_over_data(fig)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 0.5, 1], [0, 0.5, 1], marker="o", label="data")
    fig.legend(loc="lower center")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    assert not legend_over_data(fig)
    plt.close(fig)


def test_text_outside_the_figure_fails():
    fig, ax = plt.subplots()
    fig.text(0.95, 0.5, "a footnote running off the right edge of the figure")
    assert text_outside(fig)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.set_xticks([0, 1], ["a tick label far too long to stay within the page " * 3, "b"], rotation=0)
    assert text_outside(fig)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.set_xlabel("x (s)")
    fig.tight_layout()
    assert not text_outside(fig)
    plt.close(fig)


def test_an_axis_an_example_sets_while_the_users_data_is_flat_fails():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 2, 5], gid="user")
    ax.plot([0, 1, 2], [0, 300, 700], gid="example")
    assert range_set_by_another(fig)
    plt.close(fig)
    fig, ax = plt.subplots()            # the same, with the axis kept on the user's data
    ax.plot([0, 1, 2], [0, 2, 5], gid="user")
    ax.plot([0, 1, 2], [0, 300, 700], gid="example")
    ax.set_ylim(-1, 6)
    assert not range_set_by_another(fig)
    plt.close(fig)
    fig, ax = plt.subplots()            # the paper's numbers on the same axes may set it
    ax.plot([0, 1, 2], [0, 2, 5], gid="user")
    ax.plot([0, 1, 2], [0, 20, 40], gid="paper")
    ax.plot([0, 1, 2], [0, 10, 30], gid="example")
    assert not range_set_by_another(fig)
    plt.close(fig)
    fig, ax = plt.subplots()            # a zero baseline the figure chose sets it, not the examples
    ax.plot([0, 1, 2], [135, 136, 137], gid="user")
    ax.plot([0, 1, 2], [116, 116, 117], gid="example")
    ax.set_ylim(bottom=0)
    assert not range_set_by_another(fig)
    plt.close(fig)
    fig, ax = plt.subplots()            # but an example's outlier above the user's data does
    ax.plot([0, 1, 2], [135, 136, 137], gid="user")
    ax.plot([0, 1, 2], [116, 900, 1700], gid="example")
    ax.set_ylim(bottom=0)
    assert range_set_by_another(fig)
    plt.close(fig)


def test_tick_labels_over_each_other_fail():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xticks(range(3), ["a platform's long name:partition", "another platform's name:partition", "c"])
    assert tick_labels_overlap(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xticks(range(3), ["a", "b", "c"])
    assert not tick_labels_overlap(fig)
    plt.close(fig)


def test_a_series_without_its_n_fails_and_a_key_or_the_paper_need_none():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="mine", gid="user")
    assert series_without_n(fig)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="mine (n=5)", gid="user")
    ax.plot([0, 1], [1, 2], label="paper: a machine", gid="paper")
    ax.plot([0, 1], [2, 3], label="open: isolated")
    assert not series_without_n(fig)
    plt.close(fig)


def test_local_series_without_the_papers_numbers_fail():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], gid="user")
    assert paper_numbers_missing(fig)
    ax.plot([0, 1], [1, 2], gid="paper")
    assert not paper_numbers_missing(fig)
    plt.close(fig)
