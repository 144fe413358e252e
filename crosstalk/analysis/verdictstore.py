"""Verdicts kept between reports (the workflow's ``<results>/.verdicts``): a platform's verdicts
follow from its rows, its cases, the probe outputs its fits read and the code and specs that judge
them, so a report judges again only the platforms where one of those changed. A new run of one
system leaves the other systems' verdicts and the shipped examples' alone.

    <store>/<key>.json    one platform's verdicts, as verdicts.json holds them

A file is written under a temporary name and renamed (an interrupted report leaves whole files or
none); one that cannot be read is judged again. Files no report used for UNUSED_GRACE_S go.
"""
import hashlib
import json
import os
import time
from pathlib import Path

from crosstalk import REPO_ROOT
from crosstalk.analysis import write_whole
from crosstalk.analysis.figurecache import rows_key
from crosstalk.analysis.ingest import raw_output_files, run_dir_of
from crosstalk.codedeps import code_files, files_digest

#: A kept platform's verdicts no report used are removed once this old (seconds): a report of
#: other systems and, soon after, of the first ones again judges nothing twice.
UNUSED_GRACE_S = 600


def judging_inputs():
    """What judges the claims besides the tables: the claims package and every crosstalk module it
    imports (crosstalk.codedeps), and the specs (their claims); a change judges every platform again."""
    return sorted(set(code_files("crosstalk.claims")) | set((REPO_ROOT / "experiments").glob("*.yaml")))


def code_digest():
    return files_digest(judging_inputs())


def _raw_outputs(perf):
    """(path, size, mtime) of every kept probe output of the runs in ``perf`` (what E5's fits read
    beyond the tables, crosstalk.analysis.ingest.RAW_OUTPUTS)."""
    runs = perf[["origin", "system", "run_id"]].drop_duplicates().itertuples(index=False, name=None)
    found = []
    for origin, system, run_id in sorted(runs):
        for path in raw_output_files(run_dir_of(origin, system, run_id)):
            st = path.stat()
            found.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}")
    return found


def platform_key(perf, cases, code, trace=False):
    """The key of one platform's verdicts: its performance rows and cases, the probe outputs of its
    runs, the judging code (``code``: :func:`code_digest`) and whether cases are traced."""
    rows = rows_key(cases, rows_key(perf, f"{code}\0{bool(trace)}"))
    return hashlib.sha256("\n".join([rows, *_raw_outputs(perf)]).encode()).hexdigest()


class Store:
    """The kept verdicts of every platform, one file each, in ``root``."""

    def __init__(self, root):
        self.root = Path(root)
        self.used = set()

    def _path(self, key):
        return self.root / f"{key}.json"

    def get(self, key):
        """The kept verdicts of ``key``, or None."""
        try:
            verdicts = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        # a platform is judged on every claim: an empty or foreign list is no kept judgement
        if not (isinstance(verdicts, list) and verdicts
                and all(isinstance(v, dict) and {"id", "verdict", "groups"} <= v.keys() for v in verdicts)):
            return None
        self.used.add(key)
        os.utime(self._path(key))        # in use: not pruned
        return verdicts

    def put(self, key, verdicts):
        from crosstalk.claims.verdictfile import to_json  # (the workflow reads this module's inputs: kept light)
        self.root.mkdir(parents=True, exist_ok=True)
        text = to_json(verdicts)
        write_whole(self._path(key), lambda tmp: tmp.write_text(text))
        self.used.add(key)

    def prune(self):
        """Remove the kept verdicts no report used for UNUSED_GRACE_S."""
        for path in self.root.glob("*.json"):
            if path.stem not in self.used and time.time() - path.stat().st_mtime >= UNUSED_GRACE_S:
                path.unlink(missing_ok=True)
