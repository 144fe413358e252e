"""The files the report workflow derives from the runs and reads back, and how to tell each whole.
One cut short (a kill of an older crosstalk mid-write, a copy between machines that stopped) still
exists, so Snakemake would take it for made and every later rule would fail on it: `crosstalk
report` removes it, and the workflow, which has each as a target, makes it again. A directory where
one of them belongs is not crosstalk's to remove: a one-line error. Kept free of pandas (workflow
imports it)."""
import os
from pathlib import Path

from crosstalk.errors import InputError

PARQUET_MAGIC = b"PAR1"


def framed(path, head, tail):
    """Whether ``path`` starts with ``head`` and ends with ``tail``: a Parquet file or a PNG that
    was not cut short (a cut-short one has lost its footer or its end chunk)."""
    with open(path, "rb") as fp:
        first = fp.read(len(head))
        fp.seek(0, os.SEEK_END)
        if fp.tell() < len(head) + len(tail):
            return False
        fp.seek(-len(tail), os.SEEK_END)
        return first == head and fp.read() == tail


def whole_parquet(path):
    return framed(path, PARQUET_MAGIC, PARQUET_MAGIC)


def whole_verdicts(path):
    # here, not at the top: crosstalk.claims imports pandas, and the Snakefile imports this module
    from crosstalk.claims.verdictfile import read
    try:
        read(path)
    except InputError:
        return False
    return True


#: (pattern under the results directory, whole?)
DERIVED = (("table.parquet", whole_parquet), ("cases.parquet", whole_parquet),
           ("*/table.parquet", whole_parquet), ("*/cases.parquet", whole_parquet),
           ("verdicts.json", whole_verdicts))


def broken(root):
    """The derived files under ``root`` that are not whole; InputError for one that is not a
    regular file."""
    found = []
    for pattern, whole in DERIVED:
        for path in sorted(Path(root).glob(pattern)):
            if not path.is_file():
                raise InputError(path, None, "not a file crosstalk wrote (a directory?): move it away, "
                                             "then run crosstalk report again")
            if not whole(path):
                found.append(path)
    return found
