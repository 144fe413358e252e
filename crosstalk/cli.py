"""The ``crosstalk`` command: a thin layer that wires ReFrame, Snakemake and Ansible.

Each sub-command lives in its own module, which exposes ``register(subparsers)``;
the parser it adds must set ``func`` (called with the parsed namespace, returns an exit code).
"""
import argparse
import importlib
import os
import sys

from crosstalk.errors import CrosstalkError

#: Modules that contribute sub-commands, in the order ``--help`` lists them.
COMMAND_MODULES = [
    "crosstalk.doctor",        # doctor
    "crosstalk.configrender",  # config render
    "crosstalk.runner",        # run
    "crosstalk.report",        # report
    "crosstalk.compare",       # compare
    "crosstalk.references",    # refs calibrate
    "crosstalk.vcluster.cli",  # vcluster up|down|status|exec, link set|show
]


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line naming the problem, exit 2 (sub-parsers inherit the class)."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser():
    parser = OneLineParser(
        prog="crosstalk",
        description="Reproducible HPC network performance and power experiments.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except CrosstalkError as err:
        print(f"crosstalk: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:   # output piped into head & co.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
