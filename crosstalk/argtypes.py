"""Argument types that refuse what cannot be meant (a negative alpha, zero cores, NaN) at parse
time, so a bad value is one ``crosstalk X: error: argument --k: ...`` line and exit status 2."""
import argparse
import math
import re

#: What a system name may be (as in the system schema): it names directories and files.
SYSTEM_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def number(minimum=None, maximum=None, above=None, below=None, integer=False):
    """A finite int/float within the bounds (``minimum``/``maximum`` inclusive, ``above``/``below``
    exclusive)."""
    def parse(text):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if integer else 'a number'}") from None
        bounds = [f">= {minimum:g}" if minimum is not None else None,
                  f"> {above:g}" if above is not None else None,
                  f"< {below:g}" if below is not None else None,
                  f"<= {maximum:g}" if maximum is not None else None]
        if (not math.isfinite(value)
                or (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
                or (above is not None and value <= above) or (below is not None and value >= below)):
            raise argparse.ArgumentTypeError(
                f"{text!r}: give a {'whole ' if integer else ''}number "
                + " and ".join(b for b in bounds if b))
        return value
    return parse
