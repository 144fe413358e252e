"""The ``crosstalk`` command: a thin layer that wires ReFrame, Snakemake and Ansible.

Each sub-command lives in its own module, which exposes ``register(subparsers)``;
the parser it adds must set ``func`` (called with the parsed namespace, returns an exit code).
"""
import argparse
import importlib
import os
import sys

from crosstalk.errors import CrosstalkError

#: Sub-command -> the module that registers it, in the order ``--help`` lists them.
COMMAND_MODULES = {
    "doctor": "crosstalk.site.doctor",
    "config": "crosstalk.site.configrender",
    "spack": "crosstalk.site.spacklock",
    "spec": "crosstalk.speccheck",
    "run": "crosstalk.run.runner",
    "report": "crosstalk.analysis.workflow",
    "compare": "crosstalk.analysis.compare",
    "claims": "crosstalk.claims.cli",
    "refs": "crosstalk.analysis.references",
    "vcluster": "crosstalk.vcluster.cli",
    "link": "crosstalk.vcluster.cli",
}


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line naming the problem, exit 2 (sub-parsers inherit the class)."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser(argv=None):
    """The parser for ``argv``. Only the named command's module is imported: jobs call
    ``crosstalk link`` several times each, and pandas/scipy would cost them a second per call."""
    parser = OneLineParser(
        prog="crosstalk",
        description="Reproducible HPC network performance and power experiments.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    if argv and argv[0] == command and command not in COMMAND_MODULES:
        # An unknown command first: argparse refuses it before it reads anything else, and its
        # message needs only the names, so no module is imported (a bad command answers at once).
        for name in COMMAND_MODULES:
            sub.add_parser(name)
        return parser
    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else COMMAND_MODULES.values()
    for name in dict.fromkeys(modules):
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None):
    args = build_parser(argv).parse_args(argv)
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
    except OSError as err:    # a file where crosstalk reads or writes (a directory, no permission): one line
        where = ": ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
        print(f"crosstalk: error: {where + ': ' if where else ''}{err.strerror or err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
