"""Numbers and times as a person reads them in a report, a message or a table (no dependencies but
numpy: the layers below the reports use them too)."""

import numpy as np


def time_text(t):
    """A time of the trajectory, in seconds, for a report: 6 significant digits below 1000 s, else
    to the millisecond, which 6 digits would not show (a log stamped in seconds since 1970:
    1700000000.680, not 1.7e+09)."""
    if t is None or np.isnan(t):
        return "—"
    return f"{t:.6g}" if abs(t) < 1e3 else f"{t:.3f}"


def fmt(x, digits=4):
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}g}"


def percent(fraction):
    """A utilisation as a percentage a person can read: '16 %', '1.2e+07 %', never 300 digits."""
    value = 100 * fraction
    return f"{value:.0f} %" if abs(value) < 1e6 else f"{value:.3g} %"
