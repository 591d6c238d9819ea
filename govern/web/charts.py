"""Inline SVG charts for the dashboard (``govern serve``): held-back debt and its ages.

Notes: docs/internals.md#web.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import pairwise

__all__ = [
    "CLASS_NAMES",
    "DEFAULT_AGE_BUCKETS",
    "DebtPoint",
    "age_histogram",
    "debt_over_time",
    "nice_ticks",
]

SVG_NS = "http://www.w3.org/2000/svg"

CLASS_NAMES: tuple[str, ...] = (
    "chart",
    "chart-debt",
    "chart-histogram",
    "chart-axis",
    "chart-grid",
    "chart-label",
    "chart-label-age",
    "chart-line",
    "chart-line-count",
    "chart-line-age",
    "chart-line-secondary",
    "chart-point",
    "chart-legend",
    "chart-bar",
    "chart-value",
    "chart-empty",
)
"""Every CSS class the charts use: the stylesheet's hooks (``static/app.css``)."""

DEFAULT_AGE_BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("< 30 d", -math.inf, 30.0),
    ("30–90 d", 30.0, 90.0),
    ("90–180 d", 90.0, 180.0),
    ("180–365 d", 180.0, 365.0),
    ("1–2 y", 365.0, 730.0),
    ("> 2 y", 730.0, math.inf),
)
"""Default buckets, ``(label, low, high)``: an age counts if ``low <= age < high``."""

# Presentation-attribute fallbacks (the stylesheet's class rules take precedence).
_INK = "#333"
_MUTED = "#666"
_GRID = "#ddd"
_COUNT_COLOUR = "#1f6feb"
_AGE_COLOUR = "#bf5700"
_BAR_COLOUR = "#1f6feb"

_FONT_SIZE = 11
_CHAR_WIDTH = 6.6  # a generous average advance at _FONT_SIZE, for spacing labels
_LABEL_GAP = 12.0

_MIN_DEBT_SIZE = (320, 140)
_MIN_HISTOGRAM_SIZE = (160, 120)

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_NOT_ID = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class DebtPoint:
    """The held-back debt on one day: open exclusions and the median of their ages.

    ``median_age_days`` is ``None`` on a day with no open exclusion (the age line has a
    gap there). A negative count, or a median age that is negative, NaN or infinite, is
    rejected with :class:`ValueError`.
    """

    day: date
    count: int
    median_age_days: float | None = None

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"DebtPoint.count must not be negative, got {self.count}")
        age = self.median_age_days
        if age is not None and not (math.isfinite(age) and age >= 0):
            raise ValueError(f"DebtPoint.median_age_days must be finite and >= 0, got {age}")


# -- text and numbers ---------------------------------------------------------------


def _esc(text: str) -> str:
    """``text`` safe in XML character data and in (double- or single-quoted) attributes."""
    text = _NOT_XML.sub("\ufffd", text)
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def _num(value: float) -> str:
    """A coordinate or value with at most one decimal, never NaN/inf, never ``-0``."""
    if not math.isfinite(value):
        return "0"
    rounded = round(value, 1)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:.1f}"


_SCALES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _scale(magnitude: float) -> tuple[float, str]:
    """The factor and suffix for labels up to ``magnitude``: none below 10,000."""
    for factor, suffix in _SCALES:
        if magnitude >= max(factor, 1e4):
            return factor, suffix
    return 1.0, ""


def _value_label(value: float, scale: tuple[float, str] | None = None) -> str:
    """A tick or bar label: plain below 10,000, then compact (``12k``, ``3.5M``)."""
    if not math.isfinite(value):
        return "0"
    factor, suffix = scale if scale is not None else _scale(abs(value))
    if value == 0:
        return "0"
    return _num(value / factor) + suffix


def _axis_labels(ticks: Sequence[float]) -> list[str]:
    """Labels for an axis's ticks, all in the unit its largest tick needs."""
    scale = _scale(max(ticks))
    return [_value_label(tick, scale) for tick in ticks]


def _chart_id(chart_id: str) -> str:
    cleaned = _NOT_ID.sub("-", chart_id)
    return cleaned if cleaned[:1].isalpha() else f"chart-{cleaned}"


def _nice_step(raw: float, min_step: float) -> float:
    """The smallest step of 1, 2 or 5 times a power of ten that is at least ``raw``."""
    if not (math.isfinite(raw) and raw > 0):
        return min_step
    power = 10.0 ** math.floor(math.log10(raw))
    step = 10 * power
    for mantissa in (1, 2, 5):
        if mantissa * power >= raw:
            step = mantissa * power
            break
    return max(step, min_step)


def _tick_values(step: float, intervals: int) -> list[float]:
    return [float(f"{i * step:.12g}") for i in range(intervals + 1)]


def nice_ticks(max_value: float, *, target: int = 5, min_step: float = 1.0) -> list[float]:
    """Ticks from 0 up to at least ``max_value``, in steps of 1, 2 or 5 times a power of 10.

    At most ``target`` intervals (``target + 1`` ticks), and steps no smaller than
    ``min_step``. A maximum that is zero, negative or not finite gives ``[0, min_step]``.
    """
    if target < 1:
        raise ValueError("target must be at least 1")
    if not (math.isfinite(max_value) and max_value > 0):
        return [0.0, float(min_step)]
    step = _nice_step(max_value / target, min_step)
    return _tick_values(step, max(1, math.ceil(max_value / step - 1e-9)))


# -- SVG pieces -----------------------------------------------------------------------


def _open_svg(width: int, height: int, kind: str, cid: str, title: str, desc: str) -> list[str]:
    """The root element with its ``<title>`` and ``<desc>`` (never empty)."""
    return [
        f'<svg xmlns="{SVG_NS}" class="chart {kind}" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="img"'
        f' aria-labelledby="{cid}-title {cid}-desc"'
        f' font-family="sans-serif" font-size="{_FONT_SIZE}">',
        f'<title id="{cid}-title">{_esc(title)}</title>',
        f'<desc id="{cid}-desc">{_esc(desc)}</desc>',
    ]


def _text(
    x: float, y: float, text: str, cls: str, *, anchor: str = "middle", fill: str = _MUTED
) -> str:
    return (
        f'<text class="{cls}" x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"'
        f' fill="{fill}">{_esc(text)}</text>'
    )


def _hline(x1: float, x2: float, y: float, cls: str, stroke: str) -> str:
    return (
        f'<line class="{cls}" x1="{_num(x1)}" y1="{_num(y)}" x2="{_num(x2)}" y2="{_num(y)}"'
        f' stroke="{stroke}" stroke-width="1"/>'
    )


def _vline(x: float, y1: float, y2: float, cls: str, stroke: str) -> str:
    return (
        f'<line class="{cls}" x1="{_num(x)}" y1="{_num(y1)}" x2="{_num(x)}" y2="{_num(y2)}"'
        f' stroke="{stroke}" stroke-width="1"/>'
    )


def _empty_label(x: float, y: float) -> str:
    return _text(x, y, "no data yet", "chart-empty", fill=_MUTED)


def _check_size(width: int, height: int, minimum: tuple[int, int]) -> None:
    if not (width >= minimum[0] and height >= minimum[1]):
        raise ValueError(
            f"a chart needs at least {minimum[0]}×{minimum[1]} pixels, got {width}×{height}"
        )
    if width > 100_000 or height > 100_000:
        raise ValueError(f"chart size {width}×{height} is unreasonably large")


def _plural(count: int, noun: str = "exclusion") -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# -- debt over time -------------------------------------------------------------------


def _label_capacity(span_px: float, chars: int) -> int:
    return max(1, int((span_px + _LABEL_GAP) // (chars * _CHAR_WIDTH + _LABEL_GAP)))


def _month_ticks(first: date, last: date, months: int) -> list[date]:
    index = first.year * 12 + first.month - 1 + (first.day != 1)
    index = -(-index // months) * months
    ticks: list[date] = []
    while index // 12 <= 9999:
        tick = date(index // 12, index % 12 + 1, 1)
        if tick > last:
            break
        ticks.append(tick)
        index += months
    return ticks


def _date_ticks(first: date, last: date, plot_width: float) -> tuple[list[date], str]:
    """Dates to label on the x axis, few enough not to overlap, and their ``strftime``."""
    span = (last - first).days
    if span == 0:
        return [first], "%Y-%m-%d"
    capacity = _label_capacity(plot_width, 10)
    for step in (1, 2, 7, 14):
        if span // step + 1 <= capacity:
            return [first + timedelta(days=k * step) for k in range(span // step + 1)], "%Y-%m-%d"
    span_months = (last.year - first.year) * 12 + last.month - first.month
    months = 1
    for months in _month_steps():
        chars = 7 if months < 12 else 4
        if span_months // months + 1 <= _label_capacity(plot_width, chars):
            break
    ticks = _month_ticks(first, last, months)
    return (ticks or [first]), ("%Y-%m" if months < 12 else "%Y")


def _month_steps() -> Iterator[int]:
    """1, 2, 3, 6 months, then 1, 2, 5, 10, 20, 50… years (beyond the 9,999 years of `date`)."""
    yield from (1, 2, 3, 6)
    years = 1
    while years <= 10_000:
        for mantissa in (1, 2, 5):
            yield 12 * mantissa * years
        years *= 10


def _downsample(points: Sequence[DebtPoint], columns: int) -> list[tuple[date, int, float | None]]:
    """At most ``columns`` points: per pixel column, the maximum count and median age."""
    first, last = points[0].day, points[-1].day
    span = (last - first).days
    if len(points) <= columns:
        return [(p.day, p.count, p.median_age_days) for p in points]
    out: list[tuple[date, int, float | None]] = []
    current = -1
    for point in points:
        column = (point.day - first).days * (columns - 1) // span if span else 0
        age = point.median_age_days
        if column != current:
            out.append((point.day, point.count, age))
            current = column
            continue
        day, count, best_age = out[-1]
        if age is not None and (best_age is None or age > best_age):
            best_age = age
        out[-1] = (day, max(count, point.count), best_age)
    return out


def _series_path(
    coords: Iterable[tuple[float, float] | None], *, step: bool
) -> tuple[str, list[tuple[float, float]]]:
    """A path through ``coords`` (``None`` breaks it) and the points left isolated."""
    parts: list[str] = []
    isolated: list[tuple[float, float]] = []
    run: list[tuple[float, float]] = []

    def flush() -> None:
        if len(run) == 1:
            isolated.append(run[0])
        elif run:
            parts.append(f"M{_num(run[0][0])} {_num(run[0][1])}")
            for (_, y0), (x1, y1) in pairwise(run):
                if step:
                    parts.append(f"H{_num(x1)}")
                    if y1 != y0:
                        parts.append(f"V{_num(y1)}")
                else:
                    parts.append(f"L{_num(x1)} {_num(y1)}")
        run.clear()

    for coord in coords:
        if coord is None:
            flush()
        else:
            run.append(coord)
    flush()
    return "".join(parts), isolated


def _debt_desc(points: Sequence[DebtPoint]) -> str:
    if not points:
        return "No data yet."
    first, last = points[0], points[-1]
    peak = first
    for point in points:
        if point.count > peak.count:
            peak = point
    days = "day" if len(points) == 1 else "days"
    age = (
        f"median age {_num(last.median_age_days)} days"
        if last.median_age_days is not None
        else "no median age"
    )
    return (
        f"{len(points)} {days} from {first.day.isoformat()} to {last.day.isoformat()}."
        f" On {last.day.isoformat()}: {_plural(last.count, 'open exclusion')}, {age}."
        f" Peak: {peak.count} on {peak.day.isoformat()}."
    )


def debt_over_time(
    points: Sequence[DebtPoint],
    *,
    width: int = 720,
    height: int = 220,
    title: str = "Held-back debt over time",
    chart_id: str = "debt-over-time",
) -> str:
    """An SVG chart of the open exclusions per day and their median age.

    The count is a step line on the left-hand axis; the median age (days) a dashed line
    on the right-hand axis, with gaps on days without one. Points need not be sorted.
    A blank ``title`` falls back to the default (the chart's accessible name).
    ``chart_id`` prefixes the ids of the ``<title>`` and ``<desc>`` (which
    ``aria-labelledby`` refers to): give each chart on a page its own. Raises
    :class:`ValueError` for a size below 320 x 140.
    """
    _check_size(width, height, _MIN_DEBT_SIZE)
    title = title if title.strip() else "Held-back debt over time"
    cid = _chart_id(chart_id)
    ordered = sorted(points, key=lambda p: p.day)
    left, right, top, bottom = 48.0, 52.0, 26.0, 26.0
    plot_w, plot_h = width - left - right, height - top - bottom
    x_end, y_base = left + plot_w, top + plot_h
    out = _open_svg(width, height, "chart-debt", cid, title, _debt_desc(ordered))

    series = _downsample(ordered, max(2, int(plot_w))) if ordered else []
    max_count = max((count for _, count, _ in series), default=0)
    max_age = max((age for _, _, age in series if age is not None), default=0.0)
    count_ticks = nice_ticks(max_count, target=max(1, min(5, int(plot_h // 24))))
    # The age axis has as many intervals as the count axis, so its ticks sit on the grid.
    intervals = len(count_ticks) - 1
    age_ticks = _tick_values(_nice_step(max_age / intervals, 1.0), intervals)
    count_top, age_top = count_ticks[-1], age_ticks[-1]

    # Grid and value axes.
    for tick, label in zip(count_ticks, _axis_labels(count_ticks), strict=True):
        y = y_base - tick / count_top * plot_h
        out.append(_hline(left, x_end, y, "chart-grid", _GRID))
        out.append(_text(left - 6, y + 4, label, "chart-label", anchor="end"))
    has_age = any(age is not None for _, _, age in series)
    if has_age:
        for tick, label in zip(age_ticks, _axis_labels(age_ticks), strict=True):
            y = y_base - tick / age_top * plot_h
            out.append(
                _text(
                    x_end + 6,
                    y + 4,
                    label,
                    "chart-label chart-label-age",
                    anchor="start",
                    fill=_AGE_COLOUR,
                )
            )
        out.append(_vline(x_end, top, y_base, "chart-axis", _MUTED))
    out.append(_vline(left, top, y_base, "chart-axis", _MUTED))
    out.append(_hline(left, x_end, y_base, "chart-axis", _MUTED))

    # Legend.
    out.append('<g class="chart-legend">')
    out.append(
        f'<line class="chart-line chart-line-count" x1="{_num(left)}" y1="12"'
        f' x2="{_num(left + 16)}" y2="12" stroke="{_COUNT_COLOUR}" stroke-width="2"/>'
    )
    out.append(_text(left + 20, 16, "open exclusions", "chart-label", anchor="start", fill=_INK))
    if has_age:
        legend_x = left + 20 + len("open exclusions") * _CHAR_WIDTH + 16
        out.append(
            '<line class="chart-line chart-line-age chart-line-secondary"'
            f' x1="{_num(legend_x)}" y1="12"'
            f' x2="{_num(legend_x + 16)}" y2="12" stroke="{_AGE_COLOUR}" stroke-width="2"'
            ' stroke-dasharray="4 3"/>'
        )
        out.append(
            _text(legend_x + 20, 16, "median age (days)", "chart-label", anchor="start", fill=_INK)
        )
    out.append("</g>")

    if not series:
        out.append(_empty_label(left + plot_w / 2, top + plot_h / 2))
        out.append("</svg>")
        return "".join(out)

    first, last = series[0][0], series[-1][0]
    span = (last - first).days

    def x_of(day: date) -> float:
        return left + (day - first).days / span * plot_w if span else left + plot_w / 2

    # Date axis.
    ticks, fmt = _date_ticks(first, last, plot_w)
    for day in ticks:
        x = x_of(day)
        out.append(_vline(x, y_base, y_base + 4, "chart-axis", _MUTED))
        out.append(_text(x, y_base + 16, day.strftime(fmt), "chart-label"))

    # Series.
    count_xy = [(x_of(day), y_base - count / count_top * plot_h) for day, count, _ in series]
    age_xy = [
        None if age is None else (x_of(day), y_base - age / age_top * plot_h)
        for day, _, age in series
    ]
    for cls, line_cls, colour, path, isolated, dash in (
        (
            "chart-line-count",
            "chart-line-count",
            _COUNT_COLOUR,
            *_series_path(count_xy, step=True),
            "",
        ),
        (
            "chart-line-age",
            "chart-line-age chart-line-secondary",
            _AGE_COLOUR,
            *_series_path(age_xy, step=False),
            ' stroke-dasharray="4 3"',
        ),
    ):
        if path:
            out.append(
                f'<path class="chart-line {line_cls}" d="{path}" fill="none" stroke="{colour}"'
                f' stroke-width="2" stroke-linejoin="round"{dash}/>'
            )
        # Points take the series' class, not chart-line-secondary: that rule's fill: none
        # would hide them.
        for x, y in isolated:
            out.append(
                f'<circle class="chart-point {cls}" cx="{_num(x)}" cy="{_num(y)}" r="3"'
                f' fill="{colour}"/>'
            )
    out.append("</svg>")
    return "".join(out)


# -- age histogram --------------------------------------------------------------------


def age_histogram(
    ages_days: Sequence[float],
    *,
    buckets: Sequence[tuple[str, float, float]] | None = None,
    width: int = 480,
    height: int = 220,
    title: str = "Ages of held-back exclusions",
    chart_id: str = "age-histogram",
) -> str:
    """An SVG bar chart of how many exclusions fall into each age bucket.

    ``buckets`` are ``(label, low, high)``; an age counts in every bucket with ``low <=
    age < high`` (an infinite age also counts where ``high`` is infinite, so that the
    default, :data:`DEFAULT_AGE_BUCKETS`, is a partition of all ages). NaN ages count
    nowhere. Each bar has its count written above it and a ``<title>`` tooltip. A blank
    ``title`` falls back to the default. Raises :class:`ValueError` for no buckets, a
    bucket whose ``low`` is not below its ``high``, or a size below 160 x 120.
    """
    _check_size(width, height, _MIN_HISTOGRAM_SIZE)
    title = title if title.strip() else "Ages of held-back exclusions"
    cid = _chart_id(chart_id)
    bucket_list = list(DEFAULT_AGE_BUCKETS if buckets is None else buckets)
    if not bucket_list:
        raise ValueError("age_histogram needs at least one bucket")
    for label, low, high in bucket_list:
        if not low < high:
            raise ValueError(f"bucket {label!r}: low ({low}) must be below high ({high})")

    counts = [0] * len(bucket_list)
    for age in ages_days:
        for i, (_, low, high) in enumerate(bucket_list):
            if low <= age < high or age == high == math.inf:
                counts[i] += 1

    summary = ", ".join(
        f"{label}: {count}" for (label, _, _), count in zip(bucket_list, counts, strict=True)
    )
    desc = f"{len(ages_days)} ages. {summary}." if ages_days else f"No data yet. {summary}."
    out = _open_svg(width, height, "chart-histogram", cid, title, desc)

    left, right, top, bottom = 40.0, 12.0, 22.0, 26.0
    plot_w, plot_h = width - left - right, height - top - bottom
    x_end, y_base = left + plot_w, top + plot_h
    ticks = nice_ticks(max(counts), target=max(1, min(5, int(plot_h // 24))))
    top_value = ticks[-1]
    for tick, label in zip(ticks, _axis_labels(ticks), strict=True):
        y = y_base - tick / top_value * plot_h
        out.append(_hline(left, x_end, y, "chart-grid", _GRID))
        out.append(_text(left - 6, y + 4, label, "chart-label", anchor="end"))
    out.append(_vline(left, top, y_base, "chart-axis", _MUTED))

    band = plot_w / len(bucket_list)
    bar_w = band * 0.7
    # Bucket names that would overlap are thinned to every ``every``-th one (each bar
    # keeps its tooltip).
    widest = max(len(label) for label, _, _ in bucket_list) * _CHAR_WIDTH + _LABEL_GAP / 2
    every = max(1, math.ceil(widest / band))
    for i, ((label, _, _), count) in enumerate(zip(bucket_list, counts, strict=True)):
        bar_h = count / top_value * plot_h
        x = left + i * band + (band - bar_w) / 2
        centre = left + (i + 0.5) * band
        out.append(
            f'<rect class="chart-bar" x="{_num(x)}" y="{_num(y_base - bar_h)}"'
            f' width="{_num(bar_w)}" height="{_num(bar_h)}" fill="{_BAR_COLOUR}">'
            f"<title>{_esc(f'{label}: {_plural(count)}')}</title></rect>"
        )
        out.append(_text(centre, y_base - bar_h - 4, _value_label(count), "chart-value", fill=_INK))
        if i % every == 0:
            out.append(_text(centre, y_base + 16, label, "chart-label"))
    out.append(_hline(left, x_end, y_base, "chart-axis", _MUTED))
    if not ages_days:
        out.append(_empty_label(left + plot_w / 2, top + plot_h / 2))
    out.append("</svg>")
    return "".join(out)
