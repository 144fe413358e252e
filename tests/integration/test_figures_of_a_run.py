"""Every figure drawn from a real run beside the shipped examples passes the figure check
(tests/figure_check.py). The shared run's rows (tests/shared_run.py: STREAM, congestion, energy,
core mapping, NiMC STREAM and active probing on the virtual cluster) are the user's platform, so the
user-against-example styling is drawn from measured values (tests/unit/test_figure_check.py draws it
from relabelled examples). It reads the shared run and makes no run of its own."""
import pytest
from figure_check import problems

from crosstalk import examples_root
from crosstalk.analysis.collect import collect
from crosstalk.analysis.figurecache import user_platforms
from crosstalk.figures import FIGURES, plt
from crosstalk.figures.style import assign_colours

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.cluster]


@pytest.fixture(scope="module")
def table(shared_run):
    """The run's rows and the examples', as the report draws them: the run's raw outputs (the
    probe samples of the Casas figures) found under its results, its platforms' colours assigned."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CROSSTALK_RESULTS_DIR", str(shared_run.results))
        perf, _, errors = collect(shared_run.results, None, examples_root())
        assert not errors, errors
        user = perf[perf["origin"] == "user"]
        assert set(user["system"]) == {"vcluster"}, set(user["system"])
        assert {"StreamTriad", "CongestionCanary", "Energy62", "NimcStream", "ActiveProbing"} <= set(user["test"])
        assign_colours(user_platforms(perf, None))
        yield perf


@pytest.mark.parametrize("fig_id", sorted(FIGURES))
def test_every_figure_of_a_run_beside_the_examples_passes_the_check(table, fig_id):
    fig, caption = FIGURES[fig_id](table, None)
    try:
        assert problems(fig_id, fig) == [] and caption
    finally:
        plt.close(fig)
