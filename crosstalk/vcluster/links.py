"""Runtime link control of the nodes' links: width levels (4X, 2X, 1X of the nominal rate) or
rates, remembered in ``links.json``, with a lock jobs hold while their links are shaped."""
import contextlib
import fcntl
import json
import os

from crosstalk.errors import CrosstalkError
from crosstalk.vcluster.procs import write_if_changed
from crosstalk.vcluster.rates import format_rate, parse_rate


class Links:
    """The link-control part of a VCluster."""

    def _links(self):
        path = self.state / "links.json"
        if path.exists():
            return json.loads(path.read_text())
        links = {n: {"width": "4X", "rate_bps": self.node_rates[n]} for n in self.nodes}
        path.write_text(json.dumps(links, indent=1))
        return links

    def link_state(self):
        """{node: {'width': '4X'|'2X'|'1X'|None, 'rate_bps', 'rate', 'nominal_bps',
        'tc_rate_bps' (what tbf on the switch port really has)}}."""
        links = self._links()
        out = {}
        for n in self.nodes:
            sent = self._sent(self._switch_of(n), self._port(n)) if self.anchor_pid(self._switch_of(n)) else None
            out[n] = dict(links[n], rate=format_rate(links[n]["rate_bps"]), nominal_bps=self.node_rates[n],
                          tc_rate_bps=sent["rate_bps"] if sent else None)
        return out

    def set_link(self, node, width=None, rate=None):
        """Set a node's link to a width level (4X, 2X, 1X of its nominal rate) or a rate."""
        self._check_node(node)
        if (width is None) == (rate is None):
            raise CrosstalkError("link set: give exactly one of --width and --rate")
        if width is not None:
            if width not in self.widths:
                raise CrosstalkError(f"--width: {width!r}: choose one of {', '.join(self.widths)}")
            bps = int(self.node_rates[node] * float(self.widths[width]))
        else:
            bps = parse_rate(rate, "--rate")
        with self._locked():
            if self.anchor_pid(node) is None or self.anchor_pid(self._switch_of(node)) is None:
                raise CrosstalkError(f"vcluster {self.name}: node {node} is not up "
                                     "(run: crosstalk vcluster up)")
            links = self._links()
            self._shape(node, bps)
            links[node] = {"width": width, "rate_bps": bps}
            write_if_changed(self.state / "links.json", json.dumps(links, indent=1))
            return links[node]

    def restore_links(self, nodes=None):
        for n in nodes or self.nodes:
            self._check_node(n)
            self.set_link(n, width="4X")

    @property
    def links_lock(self):
        """Held (flock) by a job for as long as it has links shaped, so jobs of concurrent runs
        never reshape or restore links under each other (outside the state dir: down keeps it)."""
        return self.state.parent / f"{self.name}.links.lock"

    @property
    def run_lock(self):
        """Held by the one ``crosstalk run`` on this cluster (crosstalk.run.uselock)."""
        return self.state.parent / f"{self.name}.run.lock"

    def remove_locks(self):
        """Delete the cluster's lock files that no one holds (``vcluster down``: nothing of the
        cluster stays behind); returns those still held, which are left alone (removing a held
        lock's file would let a second holder in)."""
        held = []
        for path in (self.links_lock, self.run_lock):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink(missing_ok=True)        # while locked: no one gets it meanwhile
            except BlockingIOError:
                held.append(path)
            finally:
                os.close(fd)
        return held

    @contextlib.contextmanager
    def link_override(self, settings):
        """``{'n2': '1X', 'n3': '250mbit'}`` for the duration of the block; nominal afterwards,
        also when the block raises."""
        try:
            for node, value in settings.items():
                if str(value).upper() in self.widths:
                    self.set_link(node, width=str(value).upper())
                else:
                    self.set_link(node, rate=value)
            yield self
        finally:
            self.restore_links()
