"""`crosstalk run`'s experiment selection: -e takes comma-separated names and may be repeated, as
--partition may (a second -e used to replace the first, silently running less than asked)."""
from crosstalk.cli import build_parser


def parse(*argv):
    return build_parser(["run", *argv]).parse_args(["run", *argv])


def test_repeated_experiment_options_add_up():
    assert parse("-e", "nimc-stream", "-e", "energy,stream").experiments == ["nimc-stream", "energy", "stream"]


def test_no_experiment_option_means_all():
    assert parse().experiments == []
