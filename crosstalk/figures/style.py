"""The one style of every figure: who is the subject, who is context, and how the papers look.

- **The user's platforms** are the subject: drawn last (on top) and first in legends, in strong
  colours, one colour per platform in every figure of a report (:func:`assign_colours`: each
  platform's name hashed into :data:`PALETTE`, the next free colour where two collide).
- **The shipped examples** (a platform ending in ``(example)``, origin ``example``) are context:
  light grey (:data:`EXAMPLE`), thin, underneath, never in the user's colours.
- **The papers' numbers**: black, open markers, dashed lines (:data:`PAPER`), labelled with the
  paper's machine (:func:`paper_label`); modelled values say so in their label.

Every artist a helper draws carries its role as ``gid`` (``user``, ``example``, ``paper``), which
the figure check (tests/figure_check.py) reads. Legends go below the panels
(:func:`legend_below`), never over data; :func:`focus` keeps an example's outlier from setting an
axis the user's data would be lost in.
"""
import math
import zlib

import numpy as np

#: Strong colours of the user's platforms (no grey, none light).
PALETTE = ("#1864ab", "#c92a2a", "#2b8a3e", "#862e9c", "#e8590c", "#0b7285", "#5f3dc4", "#a61e4d")
#: The shipped examples: light grey, whatever platform.
EXAMPLE = "#b8bec4"
#: The papers' numbers: black open markers on a dashed line.
PAPER = {"color": "black", "marker": "o", "markerfacecolor": "white", "markeredgecolor": "black",
         "linestyle": "--", "linewidth": 1.0, "markersize": 5, "zorder": 4}
#: Paper bars: white, black edge, hatched.
PAPER_BAR = {"facecolor": "white", "edgecolor": "black", "hatch": "///", "linewidth": 0.8}
#: Markers telling apart several series of one platform in one panel (partitions, environments).
MARKERS = "osD^v<>"
#: Series per panel the figure check allows (tests/figure_check.py).
MAX_SERIES = 8


def platform_of(target):
    """The platform part of a target (``platform:partition+environ``)."""
    return str(target).split(":", 1)[0]


def is_example(target):
    """A shipped example's series (its platform ends with ``(example)``)."""
    return platform_of(target).rstrip().endswith("(example)")


def role(target):
    return "example" if is_example(target) else "user"


#: The colour of each of the report's platforms (:func:`assign_colours`).
_ASSIGNED = {}


def _slot(platform):
    return zlib.crc32(platform.encode()) % len(PALETTE)


def assign_colours(platforms):
    """Give the report's user platforms colours of their own, the same in every figure: each takes
    its name's hashed colour, or the next free one where an earlier platform (alphabetically) has
    it, so that a new platform seldom moves another's colour. Beyond :data:`PALETTE`'s eight,
    colours repeat. Returns ``{platform: colour}``."""
    taken, assigned = set(), {}
    for platform in sorted(set(platforms)):
        free = [i for i in range(len(PALETTE)) if i not in taken] or list(range(len(PALETTE)))
        slot = min(free, key=lambda i: (i - _slot(platform)) % len(PALETTE))
        taken.add(slot)
        assigned[platform] = PALETTE[slot]
    _ASSIGNED.clear()
    _ASSIGNED.update(assigned)
    return assigned


def colour(target):
    """The colour of a target's platform, the same in every figure: light grey for an example;
    a platform :func:`assign_colours` was not given takes its hashed colour."""
    if is_example(target):
        return EXAMPLE
    platform = platform_of(target)
    return _ASSIGNED.get(platform) or PALETTE[_slot(platform)]


def short(target, width=28):
    """A target for a tick label or legend: the platform without its host-class hash, the partition;
    the full names are in the caption (:func:`targets_note`)."""
    platform, _, rest = str(target).partition(":")
    name = platform.split("@", 1)[0] + (" (example)" if is_example(target) else "")
    partition = rest.split("+", 1)[0]
    text = f"{name}:{partition}" if partition else name
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def targets_note(targets):
    """The caption's list of the full target names behind the short labels."""
    return "; ".join(f"{short(t)} = {t}" for t in targets)


def index_in_platform(target, targets):
    """The place of ``target`` among ``targets`` of the same platform (its marker)."""
    same = [t for t in targets if platform_of(t) == platform_of(target)]
    return same.index(target) if target in same else 0


def series(target, index=None, targets=()):
    """Line/marker keywords of a target's series (``index``, or its place among ``targets`` of its
    platform: several series of one platform)."""
    if index is None:
        index = index_in_platform(target, targets)
    if is_example(target):
        return {"color": EXAMPLE, "marker": MARKERS[index % len(MARKERS)], "linewidth": 1.0, "markersize": 4,
                "zorder": 2, "gid": "example"}
    return {"color": colour(target), "marker": MARKERS[index % len(MARKERS)], "linewidth": 2.0, "markersize": 6,
            "zorder": 3, "gid": "user"}


#: Hatches telling apart bars of several series of one platform.
HATCHES = ("", "..", "xx", "oo")


def bar_style(target, targets=()):
    """Bar keywords of a target: strong colour, or light grey for an example; a second partition of
    the same platform dotted."""
    return {"color": colour(target), "edgecolor": "white" if not is_example(target) else "#868e96",
            "hatch": HATCHES[index_in_platform(target, targets) % len(HATCHES)] or None,
            "linewidth": 0.6, "gid": role(target), "zorder": 3 if not is_example(target) else 2}


def paper_label(machine, what="paper"):
    return f"{what}: {machine}"


def with_n(label, n):
    return f"{label} (n={int(n)})"


def tag(artists, gid):
    """Mark artists (a container, a list, one) with their role for the figure check."""
    items = artists if isinstance(artists, (list, tuple)) else [artists]
    for artist in items:
        if hasattr(artist, "patches"):                       # a BarContainer
            tag(list(artist.patches), gid)
        elif hasattr(artist, "lines") and isinstance(artist.lines, tuple):     # an ErrorbarContainer
            line, caps, bars = artist.lines
            tag([a for a in (line, *caps, *bars) if a is not None], gid)
        elif hasattr(artist, "set_gid"):
            artist.set_gid(gid)
    return artists


def errorbars(ax, x, stats, target, label=None, scale=1.0, index=None, targets=(), horizontal=False, **kw):
    """The medians of ``stats`` (summarise()'s median/low/high/n) at ``x`` with their interval as
    error bars, in the target's style; the label gets n (the largest of the points). Where
    ``stats`` has ``exact`` (summarise(..., interval="claims")), a point without the claims'
    interval gets its range as a dotted, uncapped bar. ``horizontal``: the medians on the x axis,
    ``x`` the rows."""
    style = {**series(target, index, targets), **kw}
    gid = style.pop("gid")
    med = np.asarray(stats["median"], dtype=float) / scale
    low = np.asarray(stats["low"], dtype=float) / scale
    high = np.asarray(stats["high"], dtype=float) / scale
    err = np.vstack([np.clip(med - low, 0, None), np.clip(high - med, 0, None)])
    exact = np.asarray(stats["exact"], dtype=bool) if "exact" in stats else np.ones(med.size, dtype=bool)
    if label is not None and "n" in stats:
        label = with_n(label, max(stats["n"]) if len(stats["n"]) else 0)

    def bars(err, **more):
        where = {"xerr": err} if horizontal else {"yerr": err}
        xy = (med, x) if horizontal else (x, med)
        return tag(ax.errorbar(*xy, **where, elinewidth=1, **more), gid)
    container = bars(np.where(exact, err, np.nan), capsize=3, label=label, **style)
    if not exact.all():
        rough = bars(np.where(exact, np.nan, err), fmt="none", capsize=0, color=style["color"],
                     zorder=style["zorder"])
        for lines in rough.lines[2]:
            lines.set_linestyle(":")
    return container


def paper_line(ax, x, y, label, **kw):
    """The paper's numbers on our axes: black open markers, dashed line."""
    (line,) = ax.plot(x, y, label=label, **{**PAPER, **kw})
    return tag(line, "paper")


def paper_bars(ax, x, heights, width, label=None, horizontal=False, **kw):
    bars = (ax.barh if horizontal else ax.bar)(x, heights, width, label=label, **{**PAPER_BAR, **kw})
    return tag(bars, "paper")


def legend_below(fig, axes=None, ncol=3, fontsize=7, keys=()):
    """One legend for the figure, below the panels (a legend in a panel hides data): the distinct
    labels of ``axes`` (all of the figure's by default), the user's series first, then ``keys``
    ((handle, label) pairs saying what a marker or line style means). Lays out the figure
    (tight_layout) with room for it."""
    axes = list(fig.axes if axes is None else axes)
    seen = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if not seen:
        fig.tight_layout()
        return None
    labels = sorted(seen, key=lambda label: ROLE_ORDER.get(gid_of(seen[label]), 1))    # stable: drawn order
    for handle, label in keys:
        seen[label] = handle
        labels.append(label)
    ncol = max(1, min(ncol, len(labels)))
    rows = math.ceil(len(labels) / ncol)
    height = fig.get_figheight()
    extra = 0.18 * rows + 0.25
    fig.set_figheight(height + extra)
    legend = fig.legend([seen[label] for label in labels], labels, loc="lower center", ncol=ncol,
                        fontsize=fontsize, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, extra / fig.get_figheight(), 1, 1))
    return legend


#: Legend order: the user's series, the papers', the examples'.
ROLE_ORDER = {"user": 0, "paper": 1, "example": 2}


def gid_of(handle):
    """The role of a legend handle (an artist or a container of them)."""
    for artist in [handle, *getattr(handle, "patches", []), *(getattr(handle, "lines", None) or [])[:1]]:
        if hasattr(artist, "get_gid") and artist.get_gid():
            return artist.get_gid()
    return None


def data_range(values):
    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    return (float(values.min()), float(values.max())) if values.size else None


def focus(ax, values, axis="y", include=(), pad=0.08, note=True):
    """Set ``ax``'s ``axis`` range to ``values`` (the user's and the paper's) and ``include`` (a
    reference such as 0), so an example's outlier cannot flatten them; says on the axes how many
    example points lie outside, clipped."""
    log = (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log"
    values = [math.log10(v) for v in [*values, *include] if v is not None and v > 0] if log else [*values, *include]
    span = data_range(values)
    if span is None:
        return None
    low, high = span
    margin = (high - low) * pad or max(abs(high), 1.0) * pad
    low, high = low - margin, high + margin
    if log:
        low, high = 10 ** low, 10 ** high
    (ax.set_ylim if axis == "y" else ax.set_xlim)(low, high)
    return low, high


def focus_on_user(ax, user, paper, include=(), axis="y"):
    """:func:`focus` on the user's values and the paper's when there are user's values (else the
    axis is left to the examples, the only local data); notes example points left off scale."""
    if not [v for v in user if v == v]:
        return
    limits = focus(ax, [*user, *paper], axis, include)
    if limits is None:
        return
    off = 0
    for artist in [*ax.get_lines(), *ax.collections]:
        if artist.get_gid() != "example":
            continue
        data = artist.get_xydata() if hasattr(artist, "get_xydata") else artist.get_offsets()
        vals = np.asarray(data, dtype=float)[:, 1 if axis == "y" else 0]
        off += int(((vals < limits[0]) | (vals > limits[1])).sum())
    clipped_note(ax, off, axis)


def clipped_note(ax, outside, axis="y"):
    """A note in the panel's corner that ``outside`` example points are beyond the range shown."""
    if outside:
        ax.text(0.99, 0.98, f"{outside} example point{'s' if outside > 1 else ''} off scale", ha="right",
                va="top", fontsize=7, color="#868e96", transform=ax.transAxes)
