"""The figure check (issue 41): what can be measured of a legible figure, rule by rule. Read by
tests/unit/test_figure_check.py (every figure from the shipped examples, and each rule failing on a
figure made to break it) and tests/integration/test_figures_of_a_run.py (every figure from a real
run beside the examples).

- at most MAX_SERIES series (distinct legend labels) in one panel;
- no legend over plotted data points (its window extent against the points' display positions);
- no text outside the figure (every visible text's window extent inside the figure's);
- no axis that an example's data stretches to ten times what the user's data (with the paper's on
  the same axes, and a zero baseline the figure chose) spans;
- no tick label over its neighbour (labels short enough for their axis);
- every series in a legend (the user's and the examples') says its n;
- the paper's numbers on the axes (an artist of role ``paper``) wherever local series are drawn,
  but in the figures of :data:`NO_PAPER_NUMBERS`, which say why."""
import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.patches import Rectangle

from crosstalk.figures.style import MAX_SERIES, gid_of


def _series(ax):
    return {label for label in ax.get_legend_handles_labels()[1] if label and not label.startswith("_")}


def too_many_series(fig):
    return [f"panel {i} ({ax.get_title()[:40]!r}): {len(_series(ax))} series"
            for i, ax in enumerate(fig.axes) if len(_series(ax)) > MAX_SERIES]


def _points(ax):
    """Display positions of the plotted data points of ``ax`` (lines' vertices, scatter offsets,
    bars' ends) that lie inside the axes."""
    pts = []
    for line in ax.get_lines():
        if line.get_visible() and line.get_marker() not in (None, "None", "", " "):
            pts.append(np.asarray(line.get_xydata(), dtype=float))
        elif line.get_visible() and len(line.get_xydata()) > 2:     # a curve: its vertices are data
            pts.append(np.asarray(line.get_xydata(), dtype=float))
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible() and len(coll.get_offsets()):
            pts.append(ax.transData.transform(np.asarray(coll.get_offsets(), dtype=float)))
            pts[-1] = ax.transData.inverted().transform(pts[-1])
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_gid() in ("user", "example", "paper"):
            x, y, w, h = patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()
            pts.append(np.array([[x + w / 2, y + h], [x + w, y + h / 2]]))
    if not pts:
        return np.empty((0, 2))
    xy = np.concatenate(pts)
    xy = xy[np.isfinite(xy).all(axis=1)]
    disp = ax.transData.transform(xy) if len(xy) else np.empty((0, 2))
    box = ax.get_window_extent()
    inside = (disp[:, 0] >= box.x0) & (disp[:, 0] <= box.x1) & (disp[:, 1] >= box.y0) & (disp[:, 1] <= box.y1)
    return disp[inside]


def _drawn(fig):
    """Lay the figure out and render it, unless nothing changed since it last was (check() runs
    three rules that need it drawn; a figure's render takes about 0.3 s)."""
    if fig.stale:
        fig.canvas.draw()


def _ticks(axis):
    """The axis's ticks within the view. Updating them marks the figure stale although they stay
    where its last draw put them, so a figure drawn before is kept marked drawn (a real change
    marks it stale again): the next rule does not render it once more."""
    stale = axis.figure.stale
    ticks = axis._update_ticks()
    axis.figure.stale = stale
    return ticks


def legend_over_data(fig):
    _drawn(fig)
    legends = [leg for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if leg is not None]
    problems = []
    for leg in legends:
        box = leg.get_window_extent()
        for i, ax in enumerate(fig.axes):
            pts = _points(ax)
            over = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
            if over.any():
                problems.append(f"a legend covers {int(over.sum())} data points of panel {i}")
    return problems


def _texts(fig):
    texts = [*fig.texts]
    if getattr(fig, "_suptitle", None) is not None:
        texts.append(fig._suptitle)
    for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if leg is not None:
            texts += leg.get_texts()
    for ax in fig.axes:
        if not ax.axison and not ax.texts and not ax.get_title():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.axison:     # the tick labels drawn: those of ticks within the view
            for axis in (ax.xaxis, ax.yaxis):
                texts += [label for tick in _ticks(axis) for label in (tick.label1, tick.label2)
                          if tick.get_visible() and label.get_visible()]
        for table in ax.tables:
            texts += [cell.get_text() for cell in table.get_celld().values()]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def text_outside(fig):
    _drawn(fig)
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    problems = []
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        if box.x0 < page.x0 - 1 or box.y0 < page.y0 - 1 or box.x1 > page.x1 + 1 or box.y1 > page.y1 + 1:
            problems.append(f"text {text.get_text()[:40]!r} outside the figure")
    return problems


def _extent(ax, gid, axis):
    """(low, high) of the data of ``gid``'s artists on ``axis`` (log10 on a log axis)."""
    values = []
    col = 0 if axis == "x" else 1
    for line in ax.get_lines():
        if line.get_gid() == gid and line.get_visible():
            values += list(np.asarray(line.get_xydata(), dtype=float)[:, col])
    for coll in ax.collections:
        if coll.get_gid() == gid and isinstance(coll, PathCollection):
            values += list(np.asarray(coll.get_offsets(), dtype=float)[:, col])
    for patch in ax.patches:
        if patch.get_gid() == gid and isinstance(patch, Rectangle):
            if axis == "x":
                values += [patch.get_x(), patch.get_x() + patch.get_width()]
            else:
                values += [patch.get_y(), patch.get_y() + patch.get_height()]
    values = np.asarray(values, dtype=float)
    log = (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "log"
    if log:
        values = np.log10(values[values > 0])
    values = values[np.isfinite(values)]
    return (values.min(), values.max()) if values.size else None


def range_set_by_another(fig):
    problems = []
    for i, ax in enumerate(fig.axes):
        for axis in ("x", "y"):
            user = _extent(ax, "user", axis)
            other = _extent(ax, "example", axis)
            if user is None or other is None:
                continue
            paper = _extent(ax, "paper", axis)
            own = (min(user[0], paper[0]), max(user[1], paper[1])) if paper else user
            low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
            log = (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "log"
            if log:
                low, high = np.log10(max(low, 1e-300)), np.log10(max(high, 1e-300))
            low, high = min(low, high), max(low, high)
            if not log and low == 0:        # a zero baseline is the figure's own choice, not an example's
                own = (min(own[0], 0.0), own[1])
            # what the examples stretch the axis to: their data within it, beyond the user's (the
            # user's own error bars or a baseline may stretch it too: not the examples' doing)
            shown = (max(other[0], low), min(other[1], high))
            stretched = (min(own[0], shown[0]), max(own[1], shown[1]))
            if (own[1] - own[0]) < 0.1 * (stretched[1] - stretched[0]):
                problems.append(f"panel {i} {axis}: the examples stretch it to {stretched[1] - stretched[0]:.3g}, "
                                f"the user's data spans {own[1] - own[0]:.3g}")
    return problems


def tick_labels_overlap(fig):
    _drawn(fig)
    renderer = fig.canvas.get_renderer()
    problems = []
    for i, ax in enumerate(fig.axes):
        if not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            labels = [tick.label1 for tick in _ticks(axis)
                      if tick.get_visible() and tick.label1.get_visible() and tick.label1.get_text().strip()]
            boxes = [label.get_window_extent(renderer) for label in labels]
            problems += [f"panel {i}: tick label {a.get_text()[:30]!r} over {b.get_text()[:30]!r}"
                         for a, b, box_a, box_b in zip(labels, labels[1:], boxes, boxes[1:]) if box_a.overlaps(box_b)]
    return problems


def _legend_entries(fig):
    """(label, role) of every legend entry the panels give."""
    entries = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, gid_of(handle))
    return entries


def series_without_n(fig):
    return [f"legend entry {label!r} gives no n" for label, role in _legend_entries(fig).items()
            if role in ("user", "example") and "n=" not in label]


#: Figures that draw local series without the paper's numbers on their axes, and why.
NO_PAPER_NUMBERS = {
    "rmamt_mpis": "Groves compares the MPI implementations by message rate (the six-neighbour halo "
                  "exchange), which two ranks cannot form; his bandwidth and latency points are in rmamt_threads",
}


def _roles(fig):
    return {artist.get_gid() for ax in fig.axes for artist in [*ax.lines, *ax.collections, *ax.patches]}


def paper_numbers_missing(fig):
    roles = _roles(fig)
    return ["local series drawn without the paper's numbers on the axes"] \
        if roles & {"user", "example"} and "paper" not in roles else []


CHECKS = (too_many_series, legend_over_data, text_outside, range_set_by_another, tick_labels_overlap,
          series_without_n)


def check(fig):
    return [problem for rule in CHECKS for problem in rule(fig)]


def problems(fig_id, fig):
    """Every rule's problems with ``fig`` (figure ``fig_id``), the paper-numbers rule included."""
    return check(fig) + ([] if fig_id in NO_PAPER_NUMBERS else paper_numbers_missing(fig))
