"""Every registered figure drawn once per session from the shipped examples' rows as the report
draws it (crosstalk.figures.draw: its PNG and caption), and put through the figure check
(tests/figure_check.py) before it is closed. tests/unit/test_figurecache.py compares its drawings
from one experiment's rows with these, tests/unit/test_figure_check.py checks these: each module
drew all of them itself (about 16 s of CPU), from rows each collected (``examples_perf``, now
collected once). Both are in one worker group (``GROUP``, given to
pytest-xdist by tests/conftest.py), so that the fixture is made once."""
from dataclasses import dataclass

import pytest

GROUP = "example-figures"


@dataclass
class ExampleFigure:
    caption: str
    png: bytes          # as crosstalk.figures.draw writes it
    problems: list      # figure_check.problems of the figure as drawn


@pytest.fixture(scope="session")
def examples_perf(tmp_path_factory):
    """The shipped examples' rows, as a report without user runs collects them."""
    from crosstalk import examples_root
    from crosstalk.analysis.collect import collect
    perf = collect(tmp_path_factory.mktemp("no-user-runs"), None, examples_root())[0]
    assert not perf.empty
    return perf


@pytest.fixture(scope="session")
def example_figures(examples_perf, tmp_path_factory):
    """``{figure id: ExampleFigure}`` of every registered figure, from the shipped examples alone."""
    from figure_check import problems

    from crosstalk.figures import FIGURES, PNG_DPI, plt
    png = tmp_path_factory.mktemp("example-figures") / "figure.png"
    drawn = {}
    for fig_id in sorted(FIGURES):
        fig, caption = FIGURES[fig_id](examples_perf, [])
        try:
            fig.savefig(png, dpi=PNG_DPI)
            drawn[fig_id] = ExampleFigure(caption, png.read_bytes(), problems(fig_id, fig))
        finally:
            plt.close(fig)
    return drawn
