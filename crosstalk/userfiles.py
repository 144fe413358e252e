"""The one reader of files a user hands us: specs, inventories, run outputs (reports, provenance,
logs, job outputs, JSON lines) and tables.

Regular files only (a FIFO would block, a device such as /dev/zero never ends), at most
:data:`MAX_BYTES` of each kind, JSON and YAML nested at most :data:`MAX_DEPTH` deep, and every
failure of reading or parsing (``RecursionError``, ``MemoryError`` and ``UnicodeDecodeError``
included) an :class:`~crosstalk.errors.InputError`: one line naming the file (and the line or
field where known).
"""
import io
import json
import os
import re
import stat

from crosstalk.errors import InputError

MiB = 1 << 20
#: Bytes one file of each kind may hold: 50 to 1000 times the largest real one, so only a file
#: that is not what it claims to be (a disk image, a runaway log) is refused before it fills memory.
MAX_BYTES = {
    "spec": 4 * MiB,          # shipped specs: 18 KiB at most
    "inventory": 4 * MiB,     # hosts.yml, group_vars files: a few KiB
    "report": 512 * MiB,      # ReFrame's report.json: 0.5 MiB for every experiment's full run
    "provenance": 64 * MiB,   # provenance.json, status.json: 4 KiB
    "log": 1024 * MiB,        # reframe.log (debug level): 0.6 MiB for a full run
    "output": 256 * MiB,      # job outputs, perflogs, kernel JSON lines: a few MiB with samples
    "table": 64 * MiB,        # tables transcribed from papers (CSV), references (YAML): a few KiB
}
#: Nesting levels a JSON or YAML file may hold: real files have under 10. Far enough below
#: Python's recursion limit (1000) for the recursive code that walks the data afterwards
#: (jsonschema, the YAML constructors), and libyaml's composer recurses in C: a YAML spec nested
#: 100 000 deep made `crosstalk spec check` die with a segmentation fault.
MAX_DEPTH = 64
#: YAML nodes a document may expand to through aliases ("billion laughs"): more than a file of
#: MAX_BYTES can spell without aliases (2 bytes a node at least), so only alias bombs reach it.
MAX_YAML_NODES = 5_000_000


class MissingFile(InputError):
    """The file does not exist (callers that expect it say so in their own words)."""


def _size_text(n):
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"


def _kind_of(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "something else"


def open_regular(path, kind):
    """A binary file object of ``path`` if it is a regular file within its kind's size limit
    (InputError otherwise; :class:`MissingFile` for a missing one).
    Checked before opening (a FIFO's open would block) and again on the open file (O_NONBLOCK: a
    FIFO put in its place meanwhile cannot hang us either)."""
    limit = MAX_BYTES[kind]
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
    except FileNotFoundError:
        raise MissingFile(path, None, "no such file") from None
    except OSError as err:
        raise InputError(path, None, f"cannot read: {err.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, None, f"cannot read: is {_kind_of(st.st_mode)}, not a regular file")
    if st.st_size > limit:
        os.close(fd)
        raise InputError(path, None, f"{_size_text(st.st_size)}: larger than the {_size_text(limit)} "
                                     f"a {kind} file may hold, refused")
    return os.fdopen(fd, "rb")


def read_bytes(path, kind):
    """The file's bytes (see :func:`open_regular`); a file that grows past the limit while read
    is refused too."""
    limit = MAX_BYTES[kind]
    with open_regular(path, kind) as fp:
        try:
            data = fp.read(limit + 1)
        except OSError as err:
            raise InputError(path, None, f"cannot read: {err.strerror}") from None
        except MemoryError:
            raise InputError(path, None, "cannot read: out of memory") from None
    if len(data) > limit:
        raise InputError(path, None, f"larger than the {_size_text(limit)} a {kind} file may hold, refused")
    return data


def read_text(path, kind, errors="strict"):
    """The file's text (UTF-8; ``errors="replace"`` for logs and outputs, where a stray byte is
    not an error)."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(path, None, f"not UTF-8 text (a byte at line {line} is not)") from None


def _deeper_than(obj, limit):
    """Whether decoded JSON ``obj`` nests more than ``limit`` levels (iterative: no recursion)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _deep_line(text):
    """``line N`` where JSON ``text`` first nests deeper than MAX_DEPTH (strings, which hold no
    raw newline, blanked first), for the error message only."""
    depth = 0
    for match in re.finditer(r"[][{}]", _JSON_STRING.sub('""', text)):
        depth += 1 if match[0] in "[{" else -1
        if depth > MAX_DEPTH:
            return f"line {match.string.count(chr(10), 0, match.start()) + 1}"
    return None


def too_deep(depth=MAX_DEPTH):
    return f"nested deeper than {depth} levels, refused"


def loads_json(text, path, field=None):
    """``json.loads(text)`` of (part of) ``path``; InputError naming ``field`` (or the line of
    the error) for invalid or too deeply nested JSON."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        where = field or f"line {err.lineno}"
        raise InputError(path, where, f"not valid JSON ({err.msg}): truncated?") from None
    except RecursionError:         # the C decoder stops at the interpreter's recursion limit
        raise InputError(path, field or _deep_line(text), too_deep()) from None
    except MemoryError:
        raise InputError(path, field, "not valid JSON: out of memory") from None
    if isinstance(obj, (dict, list)) and _deeper_than(obj, MAX_DEPTH):
        raise InputError(path, field or _deep_line(text), too_deep())
    return obj


def load_json(path, kind):
    """The decoded JSON file (see :func:`read_text` and :func:`loads_json`)."""
    return loads_json(read_text(path, kind), path)


def _yaml_error(path, err):
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return InputError(path, f"line {mark.line + 1}" if mark else None, f"invalid YAML: {problem}")


def _check_yaml_events(text, path, parser):
    """Walk the document's events (iteratively, in ``parser``) and refuse it at the first node
    nested deeper than MAX_DEPTH or once it expands to more than MAX_YAML_NODES nodes."""
    import yaml
    stack, sizes, total = [], {}, 0        # stack: [anchor, nodes so far] of each open collection
    for event in yaml.parse(text, Loader=parser):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise InputError(path, f"line {event.start_mark.line + 1}", too_deep())
            stack.append([event.anchor, 1])
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(event.anchor, 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = nodes
        if stack:
            stack[-1][1] += nodes
        else:
            total += nodes
        if total + sum(n for _, n in stack) > MAX_YAML_NODES:
            raise InputError(path, f"line {event.end_mark.line + 1}",
                             f"expands to more than {MAX_YAML_NODES} nodes through aliases, refused")


def loads_yaml(text, path, loader=None):
    """The YAML document ``text`` of ``path`` through ``loader`` (default: libyaml's safe loader
    where PyYAML has it: every workflow job loads every spec). Its depth is checked first on the
    parser's events, which libyaml produces without recursion."""
    import yaml
    fast = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        try:
            _check_yaml_events(text, path, fast)
        except yaml.YAMLError:          # the error again, in the pure-Python parser's words
            _check_yaml_events(text, path, yaml.SafeLoader)
        return yaml.load(text, Loader=loader or fast)
    except yaml.YAMLError as err:
        raise _yaml_error(path, err) from None
    except RecursionError:
        raise InputError(path, None, too_deep()) from None
    except MemoryError:
        raise InputError(path, None, "invalid YAML: out of memory") from None


def load_yaml(path, kind, loader=None):
    """The YAML file's document (see :func:`read_text` and :func:`loads_yaml`)."""
    return loads_yaml(read_text(path, kind), path, loader)


def csv_rows(path, text=None):
    """The rows (dicts of text) of a CSV table (``text``: its text, if already read), ``#``
    comment lines left out."""
    import csv
    text = read_text(path, "table") if text is None else text
    lines = (ln for ln in io.StringIO(text, newline="") if not ln.startswith("#"))
    try:
        return list(csv.DictReader(lines, skipinitialspace=True))
    except csv.Error as err:
        raise InputError(path, None, f"not a CSV table ({err})") from None
