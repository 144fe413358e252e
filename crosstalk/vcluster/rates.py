"""Link rates in tc notation ('250mbit') and the tbf bucket that lets a shaped link reach them."""
import re

from crosstalk.errors import CrosstalkError

RATE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kmg]?)bit$")
_UNIT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
MIN_BURST = 128 * 1024          # bytes; must exceed a GSO packet (64 KiB)
#: How long a queue a shaped link holds before it drops (tbf's ``latency``). The papers' fabrics
#: are lossless (credit flow control); a tbf drops when its queue is full, and a TCP flow that
#: loses its last packets waits a 200 ms retransmit timeout, which is not congestion: at 50 ms the
#: fat tree's uplink dropped 328 packets in 5 congestion jobs, an incast sender in a timeout held
#: up the whole incast, and the bandwidth canary had the link to itself (1.2-1.8x, once 0.97);
#: at 200 ms the same jobs dropped nothing and the canary got its share (3.0-3.4x).
QUEUE_MS = 200


def parse_rate(text, where="rate"):
    """'250mbit' -> 250_000_000 (bit/s). Raises CrosstalkError naming ``where``."""
    m = RATE_RE.match(str(text).strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise CrosstalkError(f"{where}: {text!r} is not a rate like 100mbit, 1gbit, 2.5gbit")
    return int(float(m.group(1)) * _UNIT[m.group(2)])


def format_rate(bps):
    for suffix, unit in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= unit and bps % unit == 0:
            return f"{bps // unit}{suffix}"
    return f"{bps}bit"


def tbf_burst(bps):
    """Bucket size in bytes: max(128 KiB, 2 ms at the rate) (a fixed burst caps fast links)."""
    return max(MIN_BURST, int(bps * 0.002 / 8))


def tbf_line(dev, bps):
    """The ``tc -batch`` line that shapes ``dev``'s egress to ``bps``."""
    return f"qdisc replace dev {dev} root tbf rate {bps}bit burst {tbf_burst(bps)} latency {QUEUE_MS}ms"
