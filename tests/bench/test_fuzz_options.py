"""Fuzz every xt-* kernel's options with bad values under the ASan/UBSan build (issue 11, item 4).

Options are enumerated from each kernel's usage text, so a new option is fuzzed without touching
this file: the usage() text in bench/src/xt-NAME.c gives the test ids at collection time and
test_help_lists_the_fuzzed_options checks that the built program's --help prints exactly those
options. Every option gets a corpus of bad values (empty, "-", out-of-range and overflowing
integers, non-finite numbers, bad size suffixes, a 10 000-character string, printf directives,
shell metacharacters, a non-UTF-8 byte string, a newline, the option as last argument, "=" forms,
repeats); flags get "--flag=value"; each kernel also gets unknown, ambiguous and clustered options
and stray operands.

One run = one process, launched without a shell and without mpirun: every kernel parses its
arguments before MPI_Init, so a bad value must end it at once. Each run must
  - end within RUN_TIMEOUT (process group killed otherwise) and not by a signal,
  - print no sanitizer report (AddressSanitizer, UBSan "runtime error:", LeakSanitizer),
  - exit 2 with exactly one line on stderr, "xt-NAME: --option: problem", naming the option
    (printable ASCII only: the line is also valid UTF-8 and cannot be split by a reader) and
    nothing on stdout,
  - or accept the value: then a single process either runs (xt-stream) or stops with the kernel's
    one-line rank-count error, and the same arguments are run again under mpirun with the ranks
    the kernel needs and QUICK arguments; that run must exit 0 within VALID_LIMIT seconds.
/tmp/xt-fuzz-pwned (the shell-injection canary) must never appear.

Runs of one test go through a pool of 2 threads (CI has 2 cores).
"""
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from xt_bench import BENCH_SRC, RMA_UCX_ENV

#: Kernel tests: CMake builds (release and ASan) and many MPI jobs; minutes, so not in the fast tier.
pytestmark = pytest.mark.slow

PWNED = "/tmp/xt-fuzz-pwned"
RUN_TIMEOUT = 30   # one process: a bad value exits at once; an accepted one pays MPI singleton init
VALID_LIMIT = 45   # an accepted value, re-run under mpirun with the QUICK arguments
WORKERS = 2
SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"runtime error:", b"LeakSanitizer",
                     b"UndefinedBehaviorSanitizer", b"SUMMARY: AddressSanitizer")
# One process of an MPI kernel whose arguments were accepted stops here (exit 2): too few ranks.
NEEDS_RANKS = re.compile(r"^xt-[\w-]+: (needs (at least 2|exactly 2|an even number of) ranks"
                         r"|found 1 node\(s\))")

# How to run each kernel for real when a value turns out valid: ranks (None: not an MPI program,
# the single process is the real run), arguments that make the run short (given before the fuzzed
# ones, so a fuzzed option overrides them) and extra environment. A new kernel must be added here.
KERNEL_RUN = {
    "xt-stream": dict(np=None, quick=["--size", "4096", "--ntimes", "2", "--threads", "1",
                                      "--no-samples"]),
    "xt-compressionb": dict(np=2, quick=["--duration", "0.05", "--msg-size", "4K"]),
    "xt-impactb": dict(np=2, quick=["--count", "2", "--interval", "1", "--no-samples"]),
    "xt-inject": dict(np=2, quick=["--duration", "0.1", "--window", "64K", "--msg-size", "4K",
                                   "--poll-us", "100"]),
    "xt-congestion": dict(np=4, quick=["--allow-shared-nodes", "--time-limit", "0.01",
                                       "--canary-fraction", "0.5", "--congestors", "a2a"]),
    "xt-hpccg": dict(np=None, quick=["--nx", "4", "--ny", "4", "--nz", "4", "--max-iter", "5"]),
    "xt-rmamt": dict(np=2, env=RMA_UCX_ENV,
                     quick=["--threads", "1", "--min-size", "1", "--max-size", "16",
                            "--iterations", "2", "--timeout", "30"]),
}
# QUICK arguments that would conflict with a fuzzed option (xt-impactb: --count or --duration).
QUICK_DROP = {("xt-impactb", "--duration"): {"--count"}}

VALUES = [
    "", "-", "-1", "0",
    "99999999999999999999", str(2**63), str(2**64), str(-2**63 - 1),
    "1e309", "-1e309", "1e-400", "nan", "inf", "-inf",
    "0x", "12abc", " 1", "1 ", "1.5K",
    "1Q", "1kk", "k", "1T",
    "x" * 10000, "9" * 10000, "1," * 5000 + "1",
    "%s%n%x", f"$(touch {PWNED})", ";", "`id`", f"a;touch {PWNED}",
    b"\xff\xfe\x80", "line\nbreak", "--help",
]
FLAG_VALUES = ["1", "", "%s%n%x", f"$(touch {PWNED})", "z" * 10000]

OPTION_LINE = re.compile(r"^\s{2,}(--[a-z][a-z0-9-]*)(?: (\S+))?(?:\s{2,}|$)")


def parse_help(text):
    """{option: takes_value} from a usage text ("  --name VALUE   description" lines)."""
    opts = {}
    for line in text.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            opts[m.group(1)] = m.group(2) is not None
    return opts


def usage_from_source(path):
    """The text usage() prints: the C string literals of the function, concatenated."""
    src = path.read_text()
    start = src.index("static void usage(void)")
    body = src[start:src.index("\n}\n", start)]
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
    return text.replace("\\n", "\n").replace('\\"', '"').replace("%%", "%")


KERNELS = sorted(p.stem for p in (BENCH_SRC / "src").glob("xt-*.c"))
SOURCE_OPTIONS = {k: parse_help(usage_from_source(BENCH_SRC / "src" / f"{k}.c")) for k in KERNELS}
OPTION_PARAMS = [pytest.param(k, opt, takes, id=f"{k}-{opt[2:]}")
                 for k in KERNELS for opt, takes in SOURCE_OPTIONS[k].items()]


# ---------------------------------------------------------------- running and judging

@dataclass
class Case:
    args: list          # fuzzed arguments (str or bytes), after the kernel's QUICK arguments
    name: str           # what the one-line error must name ("xt-NAME: <name>: ...")
    expect: str = ""    # regex the error line must match as well (the kind of problem)
    cut: bool = False   # name is only the start of what the error shows (long text shortened)


@dataclass
class Run:
    rc: object          # exit status, negative for a signal, None if it timed out
    out: bytes
    err: bytes
    seconds: float


def launch(cmd, env, timeout):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its own session: mpirun and every rank
        out, err = p.communicate()
        rc = None
    return Run(rc, out, err, time.monotonic() - t0)


def shown(arg, limit=60):
    """A case's argument for messages: printable, long strings cut."""
    text = arg.decode("latin-1") if isinstance(arg, bytes) else arg
    text = repr(text)
    return text if len(text) <= limit else f"{text[:limit]}...({len(arg)} chars)"


def printable(arg):
    """What a one-line error may show of user text: bytes outside printable ASCII become '?'."""
    raw = arg if isinstance(arg, bytes) else arg.encode()
    return "".join(chr(b) if 0x20 <= b < 0x7f else "?" for b in raw)


def run_problems(run, what):
    """Problems every run can have, whatever its exit status."""
    problems = []
    if run.rc is None:
        problems.append(f"{what}: no exit within the time limit ({run.seconds:.0f} s)")
    elif run.rc < 0:
        problems.append(f"{what}: killed by signal {-run.rc}")
    for marker in SANITIZER_MARKERS:
        if marker in run.err:
            problems.append(f"{what}: sanitizer report ({marker.decode()})")
            break
    return problems


def judge(kernel, exe, case, mpi_env):
    """Problems of one fuzz case (empty list: fine)."""
    spec = KERNEL_RUN[kernel]
    fuzzed = case.args[0] if isinstance(case.args[0], str) else ""
    drop = QUICK_DROP.get((kernel, fuzzed.split("=")[0]), set())
    quick, i = [], 0
    while i < len(spec["quick"]):
        a = spec["quick"][i]
        takes = SOURCE_OPTIONS[kernel].get(a, False)
        if a not in drop:
            quick += spec["quick"][i:i + 1 + takes]
        i += 1 + takes
    args = [*quick, *case.args]
    run = launch([str(exe), *args], mpi_env, RUN_TIMEOUT)
    problems = run_problems(run, "1 process")
    err = run.err.decode("utf-8", "replace")
    lines = err.rstrip("\n").split("\n") if err else []
    if problems:
        pass
    elif run.rc == 0 and spec["np"] is None:
        if run.seconds > VALID_LIMIT:
            problems.append(f"accepted but took {run.seconds:.0f} s")
    elif run.rc == 2 and spec["np"] and len(lines) == 1 and NEEDS_RANKS.match(lines[0]):
        # accepted by the parser: the real run under mpirun must be quick and succeed
        env = dict(mpi_env, **spec.get("env", {}))
        cmd = ["mpirun", "--oversubscribe", "-np", str(spec["np"]), str(exe), *args]
        real = launch(cmd, env, VALID_LIMIT)
        problems += run_problems(real, f"accepted, but mpirun -np {spec['np']}")
        if not problems and real.rc != 0:
            problems.append(f"accepted, but mpirun -np {spec['np']} exited {real.rc}")
        if problems:
            problems.append(f"mpirun stderr: {real.err.decode('utf-8', 'replace')[-600:]!r}")
        return problems
    elif run.rc != 2:
        problems.append(f"exit status {run.rc}")
    else:
        want = f"{kernel}: {case.name}" + ("" if case.cut else ": ")
        if len(lines) != 1:
            problems.append(f"{len(lines)} lines on stderr")
        elif not lines[0].startswith(want):
            problems.append(f"error does not start with {want!r}")
        elif case.expect and not re.search(case.expect, lines[0]):
            problems.append(f"error does not say /{case.expect}/")
        try:
            run.err.decode("ascii")
        except UnicodeDecodeError:
            problems.append("error line is not printable ASCII")
        if run.out:
            problems.append("output on stdout")
    if problems:
        problems.append(f"stderr: {err[:300]!r}")
    return problems


def fuzz(kernel, exe, cases, mpi_env):
    """Runs every case (pool of WORKERS); returns (runs, failure messages)."""
    assert not os.path.exists(PWNED), f"{PWNED} exists before the run: remove it"
    with ThreadPoolExecutor(WORKERS) as pool:
        verdicts = list(pool.map(lambda c: judge(kernel, exe, c, mpi_env), cases))
    failures = [f"{kernel} {' '.join(shown(a) for a in case.args)}: " + "; ".join(problems)
                for case, problems in zip(cases, verdicts) if problems]
    if os.path.exists(PWNED):
        failures.append(f"{PWNED} was created: an argument reached a shell")
    print(f"\n{kernel}: {len(cases)} runs, {len(failures)} failing")
    return len(cases), failures


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("kernel", KERNELS)
def test_help_lists_the_fuzzed_options(bench_asan_bin, mpi_env, kernel):
    """The built program's --help prints the options the fuzz tests were collected from, and
    there are enough of them that the fuzzing cannot silently cover nothing."""
    assert kernel in KERNEL_RUN, f"add {kernel} to KERNEL_RUN (ranks and quick arguments)"
    run = launch([str(bench_asan_bin / kernel), "--help"], mpi_env, RUN_TIMEOUT)
    assert run.rc == 0, run.err
    opts = parse_help(run.out.decode())
    assert opts == SOURCE_OPTIONS[kernel]
    assert "--help" in opts and opts["--help"] is False
    assert len(opts) >= 6, opts
    assert sum(opts.values()) >= 4, f"too few options taking a value: {opts}"
    assert len(OPTION_PARAMS) >= 40


@pytest.mark.parametrize("kernel,option,takes_value", OPTION_PARAMS)
def test_fuzz_option(bench_asan_bin, mpi_env, kernel, option, takes_value):
    if takes_value:
        cases = [Case([option, v], option) for v in VALUES]
        cases += [Case([option], option, "missing"),                  # option as last argument
                  Case([f"{option}="], option, "missing"),
                  Case([f"{option}=12abc"], option),
                  Case([f"{option}=%s%n%x"], option),
                  Case([option, "12abc", option, "12abc"], option),   # repeated
                  Case([option, "nan", option], option)]
    else:
        cases = [Case([f"{option}={v}"], option, r"\bno (value|argument)\b|does not take")
                 for v in FLAG_VALUES]
    n, failures = fuzz(kernel, bench_asan_bin / kernel, cases, mpi_env)
    assert not failures, f"{len(failures)} of {n} runs failed:\n" + "\n".join(failures)


def ambiguous_prefix(options):
    """'--x' abbreviating two or more of the options, or None."""
    for opt in options:
        for end in range(3, len(opt)):
            prefix = opt[:end]
            if prefix not in options and sum(o.startswith(prefix) for o in options) >= 2:
                return prefix
    return None


@pytest.mark.parametrize("kernel", KERNELS)
def test_fuzz_unknown_options_and_operands(bench_asan_bin, mpi_env, kernel):
    opts = SOURCE_OPTIONS[kernel]
    flag = next((o for o, takes in opts.items() if not takes and o != "--help"), "--help")
    long_opt = "--" + "y" * 10000
    cases = [
        Case(["--bogus"], "--bogus", "unknown"),
        Case(["--bogus=1"], "--bogus", "unknown"),
        Case(["-x"], "-x", "unknown"),
        Case([f"-{flag[2]}x"], f"-{flag[2]}", "unknown"),            # a short-option cluster
        Case([long_opt], printable(long_opt)[:30], "unknown", cut=True),
        Case(["--%s%n%x"], "--%s%n%x", "unknown"),
        Case(["--new\nline"], "--new?line", "unknown"),
        Case([b"--\xff\xfe"], "--??", "unknown"),
        Case(["extra"], "extra", "unexpected"),
        Case(["-"], "-", "unexpected"),
        Case([""], "''", "unexpected"),
        Case([f"$(touch {PWNED})"], f"$(touch {PWNED})", "unexpected"),
        Case(["--", "--bogus"], "--bogus", "unexpected"),              # after "--": an operand
    ]
    prefix = ambiguous_prefix(list(opts))
    if prefix:
        cases.append(Case([prefix], prefix, "ambiguous"))
    # every flag given twice (with the QUICK arguments): valid, must run and exit 0
    flags = [o for o, takes in opts.items() if not takes and o != "--help"]
    cases.append(Case([*flags, *flags], "", ""))
    n, failures = fuzz(kernel, bench_asan_bin / kernel, cases, mpi_env)
    assert not failures, f"{len(failures)} of {n} runs failed:\n" + "\n".join(failures)
