"""Parse and lint Apptainer definition files (containers/crosstalk.def).

Apptainer is not installed everywhere we test, so the rules the image depends on are checked here:
a known bootstrap agent with its required header keys, the required sections, the labels that
record versions, a %post that only calls the one install script (the script CI proves), and no
registry or mirror host written into the recipe. Problems are one line naming file and section.
"""
import re
import sys
from pathlib import Path

from crosstalk import REPO_ROOT, __version__
from crosstalk.errors import CrosstalkError, InputError

DEF_FILE = REPO_ROOT / "containers" / "crosstalk.def"
INSTALL_SCRIPT = "/opt/crosstalk/src/install.sh"

#: Bootstrap agents Apptainer knows, with the header keys each one needs.
BOOTSTRAPS = {
    "debootstrap": ("OSVersion", "MirrorURL"),
    "yum": ("OSVersion", "MirrorURL"), "dnf": ("OSVersion", "MirrorURL"),
    "zypper": ("OSVersion", "MirrorURL"),
    "docker": ("From",), "docker-daemon": ("From",), "docker-archive": ("From",),
    "oci": ("From",), "oci-archive": ("From",), "library": ("From",), "oras": ("From",),
    "shub": ("From",), "localimage": ("From",),
    "busybox": (), "arch": (), "scratch": (),
}
SECTIONS = {"arguments", "setup", "files", "post", "environment", "runscript", "startscript",
            "test", "labels", "help"}
REQUIRED_SECTIONS = ("post", "labels", "test", "help")
REQUIRED_LABELS = ("org.crosstalk.version", "org.crosstalk.os", "org.crosstalk.mpi",
                   "org.crosstalk.install-script")
_SECTION = re.compile(r"^%([A-Za-z_]\w*)\s*(.*)$")
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*:\s*(.*)$")
_TEMPLATE = re.compile(r"^\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}$")
# A URL with a host, or a dotted name ending in a public top-level domain.
_URL_HOST = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s{]")
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|edu|gov|dev|cloud|de|uk|fr|cn|eu)\b",
                     re.IGNORECASE)
_POST_CALL = re.compile(r"^(?:(?:/bin/|/usr/bin/)?(?:ba)?sh\s+)?" + re.escape(INSTALL_SCRIPT)
                        + r"(?:\s+[\w/.-]+)*$")


def parse_def(path):
    """``(header, sections)``: header keys to values, section names to their body lines.

    Each value keeps the 1-based line number where it starts, for error messages.
    """
    path = Path(path)
    header, sections, current = {}, {}, None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        match = _SECTION.match(line) if raw[:1] == "%" else None
        if match:
            name = match.group(1).lower()
            if name.startswith("app"):
                raise InputError(path, f"%{name}", "SCIF app sections are not used by crosstalk")
            if name not in SECTIONS:
                raise InputError(path, f"%{name}", f"unknown section (line {number})")
            if name in sections:
                raise InputError(path, f"%{name}", f"section repeated (line {number})")
            current = name
            sections[name] = []
            continue
        if current is not None:
            sections[current].append((number, raw))
        elif line and not line.startswith("#"):
            match = _HEADER.match(line)
            if not match:
                raise InputError(path, "header", f"line {number}: expected 'Key: value'")
            header[match.group(1)] = (number, match.group(2).strip())
    return header, sections


def _code(lines):
    """Non-empty, non-comment lines of a section body."""
    return [(n, text.strip()) for n, text in lines if text.strip() and not text.strip().startswith("#")]


def _labels(path, lines):
    labels = {}
    for number, text in _code(lines):
        key, _, value = text.partition(" ")
        if not value.strip():
            raise InputError(path, "%labels", f"line {number}: label {key!r} has no value")
        labels[key] = value.strip()
    return labels


def lint_def(path=DEF_FILE, version=__version__):
    """Check a definition file; returns ``(header, sections, labels)`` or raises InputError."""
    path = Path(path)
    header, sections = parse_def(path)
    if "Bootstrap" not in header:
        raise InputError(path, "header.Bootstrap", "missing (e.g. 'Bootstrap: debootstrap')")
    agent = header["Bootstrap"][1]
    if agent not in BOOTSTRAPS:
        raise InputError(path, "header.Bootstrap", f"unknown agent {agent!r}")
    for key in BOOTSTRAPS[agent]:
        if key not in header:
            raise InputError(path, f"header.{key}", f"required by 'Bootstrap: {agent}'")
    if "MirrorURL" in header and not _TEMPLATE.match(header["MirrorURL"][1]):
        raise InputError(path, "header.MirrorURL",
                         "must be a build argument such as '{{ MIRROR }}', not a fixed mirror")
    for name in REQUIRED_SECTIONS:
        if not _code(sections.get(name, [])):
            raise InputError(path, f"%{name}", "required section missing or empty")

    post = _code(sections["post"])
    if len(post) != 1 or not _POST_CALL.match(post[0][1]):
        number = post[0][0] if post else "?"
        raise InputError(path, "%post", f"line {number}: must only run {INSTALL_SCRIPT} "
                                        "(the install logic lives in containers/install.sh)")
    copied = [text.split()[-1] for _, text in _code(sections.get("files", []))]
    if INSTALL_SCRIPT not in copied:
        raise InputError(path, "%files", f"must copy containers/install.sh to {INSTALL_SCRIPT}")

    labels = _labels(path, sections["labels"])
    for key in REQUIRED_LABELS:
        if key not in labels:
            raise InputError(path, "%labels", f"label {key!r} missing")
    if version and labels["org.crosstalk.version"] != version:
        raise InputError(path, "%labels", f"org.crosstalk.version is {labels['org.crosstalk.version']!r}"
                                          f" but crosstalk is {version!r}")

    for where, lines in [("header", [(n, f"{k}: {v}") for k, (n, v) in header.items()]),
                         *((f"%{name}", body) for name, body in sections.items())]:
        for number, text in _code(lines):
            found = _URL_HOST.search(text) or _DOMAIN.search(text)
            if found:
                raise InputError(path, where, f"line {number}: host name {found.group(0)!r}: "
                                              "registries and mirrors are build arguments")
    return header, sections, labels


def main(argv=None):
    paths = (argv if argv is not None else sys.argv[1:]) or [DEF_FILE]
    try:
        for path in paths:
            lint_def(path)
            print(f"{path}: ok")
    except CrosstalkError as err:
        print(f"crosstalk: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
