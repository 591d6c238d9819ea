"""The dashboard's SVG charts: well-formed, escaped, CSP-safe, bounded, deterministic, fast."""

from __future__ import annotations

import itertools
import math
import random
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from govern.web.charts import (
    CLASS_NAMES,
    DEFAULT_AGE_BUCKETS,
    DebtPoint,
    age_histogram,
    debt_over_time,
    nice_ticks,
)

NS = "http://www.w3.org/2000/svg"
HOSTILE = "<script>alert(1)</script> \"quoted\" & 'single' </title>"
NUMBER = re.compile(r"-?\d+(?:\.\d)?")
COORDINATE_ATTRIBUTES = ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "width", "height", "r")
DATE_LABEL = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


def local(element: ET.Element) -> str:
    return element.tag.rpartition("}")[2]


def parse(svg: str) -> ET.Element:
    """Parse ``svg`` and check what every chart must have."""
    root = ET.fromstring(svg)  # noqa: S314 - our own output
    assert root.tag == f"{{{NS}}}svg"
    width, height = float(root.attrib["width"]), float(root.attrib["height"])
    assert root.attrib["viewBox"] == f"0 0 {root.attrib['width']} {root.attrib['height']}"
    assert width > 0
    assert height > 0
    assert root.attrib["role"] == "img"
    title = root.find(f"{{{NS}}}title")
    assert title is not None
    assert title.text
    ids = {el.attrib["id"] for el in root.iter() if "id" in el.attrib}
    labelled_by = root.attrib["aria-labelledby"].split()
    assert labelled_by
    assert set(labelled_by) <= ids
    assert root.find(f"{{{NS}}}desc") is not None
    # CSP: no inline styles, no scripts, no style sheets, no event handlers.
    assert "style=" not in svg
    assert "<script" not in svg.lower()
    assert "<style" not in svg.lower()
    for element in root.iter():
        assert "style" not in element.attrib
        assert local(element) not in {"script", "style", "foreignObject"}
        assert not any(name.startswith("on") for name in element.attrib)
    return root


def by_class(root: ET.Element, cls: str) -> list[ET.Element]:
    return [el for el in root.iter() if cls in el.attrib.get("class", "").split()]


def path_points(d: str) -> Iterator[tuple[float, float]]:
    """The vertices of a path made of M, L, H and V commands (absolute)."""
    tokens = re.findall(r"[MLHV]|-?\d+(?:\.\d+)?", d)
    assert "".join(tokens) == d.replace(" ", "")
    x = y = 0.0
    i = 0
    while i < len(tokens):
        command = tokens[i]
        if command in "ML":
            x, y = float(tokens[i + 1]), float(tokens[i + 2])
            i += 3
        elif command == "H":
            x = float(tokens[i + 1])
            i += 2
        elif command == "V":
            y = float(tokens[i + 1])
            i += 2
        else:  # pragma: no cover - the assertion above rules it out
            raise AssertionError(command)
        yield x, y


def check_geometry(root: ET.Element) -> None:
    """Every number has at most one decimal and every coordinate lies in the viewBox."""
    width, height = float(root.attrib["width"]), float(root.attrib["height"])
    for element in root.iter():
        for name, value in element.attrib.items():
            assert "nan" not in value.lower() or name in {"class", "id"}
            assert "inf" not in value.lower() or name in {"class", "id"}
        for name in COORDINATE_ATTRIBUTES:
            if name in element.attrib:
                assert NUMBER.fullmatch(element.attrib[name]), (name, element.attrib[name])
        tag = local(element)
        xs = [float(element.attrib[n]) for n in ("x", "x1", "x2", "cx") if n in element.attrib]
        ys = [float(element.attrib[n]) for n in ("y", "y1", "y2", "cy") if n in element.attrib]
        if tag == "rect":
            xs.append(float(element.attrib["x"]) + float(element.attrib["width"]))
            ys.append(float(element.attrib["y"]) + float(element.attrib["height"]))
            assert float(element.attrib["height"]) >= 0
        if tag == "path":
            for px, py in path_points(element.attrib["d"]):
                xs.append(px)
                ys.append(py)
        for coordinate in xs:
            assert 0 <= coordinate <= width, (tag, coordinate, width)
        for coordinate in ys:
            assert 0 <= coordinate <= height, (tag, coordinate, height)


def check_classes(root: ET.Element) -> None:
    for element in root.iter():
        for cls in element.attrib.get("class", "").split():
            assert cls in CLASS_NAMES


def daily(counts: list[int], ages: list[float | None] | None = None) -> list[DebtPoint]:
    start = date(2024, 1, 1)
    ages = ages if ages is not None else [float(c) for c in counts]
    return [
        DebtPoint(start + timedelta(days=i), count, age)
        for i, (count, age) in enumerate(zip(counts, ages, strict=True))
    ]


def label_value(text: str | None) -> float:
    """The number a value label stands for (``12.5k`` is 12,500)."""
    assert text is not None
    suffixes = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if text[-1:] in suffixes:
        return float(text[:-1]) * suffixes[text[-1]]
    return float(text)


def count_tick_values(root: ET.Element) -> list[float]:
    """The left-hand axis labels of a chart (text-anchor end)."""
    return [
        label_value(el.text)
        for el in by_class(root, "chart-label")
        if el.attrib.get("text-anchor") == "end"
    ]


# -- nice ticks -----------------------------------------------------------------------


def is_nice_step(step: float) -> bool:
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, m, rel_tol=1e-9) for m in (1, 2, 5))


@pytest.mark.parametrize(
    ("max_value", "expected"),
    [
        (0, [0, 1]),
        (-3, [0, 1]),
        (math.nan, [0, 1]),
        (math.inf, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 3]),
        (6, [0, 2, 4, 6]),
        (7, [0, 2, 4, 6, 8]),
        (10, [0, 2, 4, 6, 8, 10]),
        (11, [0, 5, 10, 15]),
        (97, [0, 20, 40, 60, 80, 100]),
        (1234, [0, 500, 1000, 1500]),
    ],
)
def test_nice_ticks_examples(max_value: float, expected: list[float]) -> None:
    assert nice_ticks(max_value) == expected


@given(
    st.floats(min_value=1e-3, max_value=1e12, allow_nan=False),
    st.integers(min_value=1, max_value=10),
)
def test_nice_ticks_are_nice_and_cover(max_value: float, target: int) -> None:
    ticks = nice_ticks(max_value, target=target, min_step=0.001)
    assert ticks[0] == 0
    assert ticks[-1] >= max_value * (1 - 1e-9)
    assert 2 <= len(ticks) <= target + 1
    step = ticks[1] - ticks[0]
    assert is_nice_step(step)
    for low, high in itertools.pairwise(ticks):
        assert math.isclose(high - low, step, rel_tol=1e-6)
    # Not wastefully tall: one step less would not cover the data.
    assert ticks[-1] - step < max_value


def test_nice_ticks_rejects_a_zero_target() -> None:
    with pytest.raises(ValueError, match="target"):
        nice_ticks(5, target=0)


# -- debt over time -------------------------------------------------------------------


def test_empty_debt_chart_says_no_data_yet() -> None:
    root = parse(debt_over_time([]))
    check_geometry(root)
    empty = by_class(root, "chart-empty")
    assert [el.text for el in empty] == ["no data yet"]
    assert not [el for el in root.iter() if local(el) in {"path", "circle"}]


def test_single_point_is_drawn_as_dots() -> None:
    svg = debt_over_time([DebtPoint(date(2024, 3, 1), 4, 12.5)])
    root = parse(svg)
    check_geometry(root)
    check_classes(root)
    points = by_class(root, "chart-point")
    assert {local(el) for el in points} == {"circle"}
    assert len(points) == 2  # one count, one age
    assert not by_class(root, "chart-empty")
    assert "2024-03-01" in [el.text for el in by_class(root, "chart-label")]
    desc = root.find(f"{{{NS}}}desc")
    assert desc is not None
    assert desc.text == (
        "1 day from 2024-03-01 to 2024-03-01. On 2024-03-01: 4 open exclusions,"
        " median age 12.5 days. Peak: 4 on 2024-03-01."
    )


def test_series_paths_follow_the_data() -> None:
    counts = [1, 3, 2, 5, 0, 4]
    root = parse(debt_over_time(daily(counts)))
    check_geometry(root)
    check_classes(root)
    (count_path,) = [el for el in by_class(root, "chart-line-count") if local(el) == "path"]
    vertices = list(path_points(count_path.attrib["d"]))
    assert count_tick_values(root) == [0, 1, 2, 3, 4, 5]
    # A step line: each count is a horizontal run at a height proportional to it.
    levels = sorted({y for _, y in vertices}, reverse=True)
    assert len(levels) == len(set(counts))
    base = levels[0]  # count 0
    unit = (base - levels[-1]) / 5
    for count in counts:
        assert any(math.isclose(base - count * unit, y, abs_tol=0.1) for y in levels)
    # x grows day by day, evenly.
    xs = sorted({x for x, _ in vertices})
    assert len(xs) == len(counts)
    gaps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
    assert max(gaps) - min(gaps) <= 0.2


@pytest.mark.parametrize("peak", [1, 7, 13, 99, 250, 9_999])
def test_count_ticks_are_nice_and_cover_the_data(peak: int) -> None:
    ticks = count_tick_values(parse(debt_over_time(daily([0, peak // 2, peak]))))
    assert ticks[0] == 0
    assert ticks[-1] >= peak
    assert is_nice_step(ticks[1] - ticks[0])
    assert ticks[-1] - (ticks[1] - ticks[0]) < peak
    assert len(ticks) <= 6


def test_count_ticks_beyond_ten_thousand_are_compact() -> None:
    root = parse(debt_over_time(daily([0, 12_345])))
    labels = [el.text for el in by_class(root, "chart-label") if el.attrib["text-anchor"] == "end"]
    assert labels == ["0", "5k", "10k", "15k"]


def test_age_axis_shares_the_grid() -> None:
    root = parse(debt_over_time(daily([2, 4, 6], [10.0, 55.5, 130.0])))
    count_labels = [
        el for el in by_class(root, "chart-label") if el.attrib.get("text-anchor") == "end"
    ]
    age_labels = by_class(root, "chart-label-age")
    assert [el.attrib["y"] for el in age_labels] == [el.attrib["y"] for el in count_labels]
    ages = [label_value(el.text) for el in age_labels]
    assert ages[0] == 0
    assert ages[-1] >= 130
    assert is_nice_step(ages[1] - ages[0])


def test_missing_median_ages_break_the_age_line() -> None:
    ages: list[float | None] = [5.0, 6.0, None, 8.0, 9.0, None, 11.0]
    root = parse(debt_over_time(daily([1, 1, 0, 1, 1, 0, 1], ages)))
    check_geometry(root)
    (age_path,) = [el for el in by_class(root, "chart-line-age") if local(el) == "path"]
    assert age_path.attrib["d"].count("M") == 2
    assert age_path.attrib["class"] == "chart-line chart-line-age chart-line-secondary"
    # The last age is alone between a gap and the end: a dot shows it.
    dots = [el for el in by_class(root, "chart-point") if "chart-line-age" in el.attrib["class"]]
    assert len(dots) == 1
    assert "chart-line-secondary" not in dots[0].attrib["class"]  # `fill: none` would hide it


def test_no_median_age_at_all_omits_the_age_axis() -> None:
    root = parse(debt_over_time(daily([0, 0, 0], [None, None, None])))
    check_geometry(root)
    assert not by_class(root, "chart-line-age")
    assert not by_class(root, "chart-label-age")
    assert count_tick_values(root) == [0, 1]


def test_all_zero_data_has_no_nan() -> None:
    svg = debt_over_time(daily([0] * 30, [0.0] * 30))
    root = parse(svg)
    check_geometry(root)
    assert "nan" not in svg.lower()
    assert "inf" not in svg.lower()


@pytest.mark.parametrize(
    "span_days", [1, 3, 10, 31, 45, 100, 400, 800, 3000, 20_000, 50_000, 2_000_000]
)
@pytest.mark.parametrize("width", [320, 720, 1400])
def test_date_labels_do_not_overlap(span_days: int, width: int) -> None:
    start = date(1970, 1, 1)
    points = [DebtPoint(start, 1, 1.0), DebtPoint(start + timedelta(days=span_days), 2, 3.0)]
    root = parse(debt_over_time(points, width=width))
    check_geometry(root)
    labels = [
        (float(el.attrib["x"]), el.text or "")
        for el in by_class(root, "chart-label")
        if DATE_LABEL.fullmatch(el.text or "")
    ]
    assert labels
    xs = [x for x, _ in labels]
    assert xs == sorted(xs)
    for (x0, text0), (x1, text1) in itertools.pairwise(labels):
        # Centred labels; about 6 px a character at 11 px plus a gap.
        assert x1 - x0 >= (len(text0) + len(text1)) / 2 * 6 + 4, (text0, text1)
    if span_days >= 10:
        assert len(labels) >= 2


def test_unsorted_input_is_sorted_and_output_is_deterministic() -> None:
    points = daily([random.Random(7).randrange(50) for _ in range(200)])  # noqa: S311
    shuffled = points[:]
    random.Random(1).shuffle(shuffled)  # noqa: S311
    first = debt_over_time(points)
    assert debt_over_time(points) == first
    assert debt_over_time(shuffled) == first
    hist = age_histogram([p.count * 10.0 for p in points])
    assert age_histogram([p.count * 10.0 for p in points]) == hist


def test_hostile_title_is_escaped() -> None:
    for svg in (
        debt_over_time(daily([1, 2]), title=HOSTILE),
        age_histogram([1.0], title=HOSTILE),
        age_histogram([1.0], buckets=[(HOSTILE, 0, 10)]),
    ):
        assert "<script>" not in svg
        assert "</title> " not in svg
        root = parse(svg)
        texts = [el.text for el in root.iter()]
        assert HOSTILE in texts or any(t and HOSTILE in t for t in texts)
    root = parse(debt_over_time([], title=HOSTILE))
    title = root.find(f"{{{NS}}}title")
    assert title is not None
    assert title.text == HOSTILE


def test_characters_xml_cannot_carry_are_replaced() -> None:
    title = "bad\x00\x1b[31mred\ud800\uffff"
    root = parse(debt_over_time([], title=title))
    element = root.find(f"{{{NS}}}title")
    assert element is not None
    assert element.text == "bad\ufffd\ufffd[31mred\ufffd\ufffd"


def test_chart_id_is_sanitised() -> None:
    root = parse(debt_over_time([], chart_id='x" onload="alert(1)'))
    assert not any(name.startswith("on") for name in root.attrib)
    assert root.attrib["aria-labelledby"] == "x--onload--alert-1--title x--onload--alert-1--desc"
    root = parse(age_histogram([], chart_id="42"))
    assert root.attrib["aria-labelledby"].startswith("chart-42-")


def test_debt_point_validation() -> None:
    with pytest.raises(ValueError, match="count"):
        DebtPoint(date(2024, 1, 1), -1, None)
    for age in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError, match="median_age_days"):
            DebtPoint(date(2024, 1, 1), 1, age)


def test_too_small_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least"):
        debt_over_time([], width=100)
    with pytest.raises(ValueError, match="at least"):
        age_histogram([], height=50)
    with pytest.raises(ValueError, match="unreasonably"):
        age_histogram([], width=10**6)


def test_fifty_thousand_points_render_fast_and_keep_spikes() -> None:
    start = date(1900, 1, 1)
    points = [
        DebtPoint(start + timedelta(days=i), 10 + i % 3, float(i % 400)) for i in range(50_000)
    ]
    points[31_337] = DebtPoint(points[31_337].day, 9_000, 5_000.0)
    started = time.perf_counter()
    svg = debt_over_time(points)
    elapsed = time.perf_counter() - started
    assert elapsed < 3.0, elapsed  # well under a second normally; loose for busy machines
    root = parse(svg)
    check_geometry(root)
    (count_path,) = [el for el in by_class(root, "chart-line-count") if local(el) == "path"]
    vertices = list(path_points(count_path.attrib["d"]))
    assert len({x for x, _ in vertices}) <= 720
    ticks = count_tick_values(root)
    assert ticks[-1] >= 9_000
    # The spike survives downsampling: its height is on the path.
    base = max(y for _, y in vertices)
    labels = {el.text: float(el.attrib["y"]) for el in by_class(root, "chart-label")}
    tick_y = labels[_label(ticks[-1])] - 4
    spike_y = base - 9_000 / ticks[-1] * (base - tick_y)
    assert any(math.isclose(y, spike_y, abs_tol=0.2) for _, y in vertices)
    assert len(svg) < 100_000


def _label(value: float) -> str:
    return str(int(value)) if value < 10_000 else f"{value / 1000:g}k"


# -- age histogram --------------------------------------------------------------------


def test_histogram_bars_are_proportional() -> None:
    # Per default bucket: 3, 0, 5, 1, 0, 2.
    ages = [0.0, 10.0, 29.9, 90.0, 100.0, 120.0, 150.0, 179.0, 200.0, 800.0, 5_000.0]
    root = parse(age_histogram(ages))
    check_geometry(root)
    check_classes(root)
    bars = by_class(root, "chart-bar")
    assert len(bars) == len(DEFAULT_AGE_BUCKETS)
    counts = [3, 0, 5, 1, 0, 2]
    heights = [float(bar.attrib["height"]) for bar in bars]
    unit = heights[2] / 5
    for count, height in zip(counts, heights, strict=True):
        assert math.isclose(height, count * unit, abs_tol=0.15)
    # Bars stand on a common baseline.
    bottoms = {float(b.attrib["y"]) + float(b.attrib["height"]) for b in bars}
    assert max(bottoms) - min(bottoms) <= 0.1
    assert [el.text for el in by_class(root, "chart-value")] == [str(c) for c in counts]
    tooltips = [bar.find(f"{{{NS}}}title") for bar in bars]
    assert [t.text if t is not None else None for t in tooltips] == [
        "< 30 d: 3 exclusions",
        "30–90 d: 0 exclusions",
        "90–180 d: 5 exclusions",
        "180–365 d: 1 exclusion",
        "1–2 y: 0 exclusions",
        "> 2 y: 2 exclusions",
    ]
    labels = [el.text for el in by_class(root, "chart-label")]
    for name, _, _ in DEFAULT_AGE_BUCKETS:
        assert name in labels
    ticks = count_tick_values(root)
    assert ticks[-1] >= 5
    assert not by_class(root, "chart-empty")


def test_histogram_custom_buckets_and_strays() -> None:
    buckets = [("young", 0.0, 10.0), ("old", 10.0, 20.0)]
    root = parse(age_histogram([1.0, 2.0, 15.0, 25.0, -1.0, math.nan], buckets=buckets))
    bars = by_class(root, "chart-bar")
    assert [float(b.attrib["height"]) > 0 for b in bars] == [True, True]
    assert [el.text for el in by_class(root, "chart-value")] == ["2", "1"]


def test_histogram_negative_and_infinite_ages_count_in_the_end_buckets() -> None:
    root = parse(age_histogram([-0.5, math.inf, -math.inf]))
    assert [el.text for el in by_class(root, "chart-value")] == ["2", "0", "0", "0", "0", "1"]


def test_histogram_empty() -> None:
    root = parse(age_histogram([]))
    check_geometry(root)
    assert [el.text for el in by_class(root, "chart-empty")] == ["no data yet"]
    assert all(float(b.attrib["height"]) == 0 for b in by_class(root, "chart-bar"))


def test_histogram_rejects_bad_buckets() -> None:
    with pytest.raises(ValueError, match="at least one bucket"):
        age_histogram([1.0], buckets=[])
    with pytest.raises(ValueError, match="below"):
        age_histogram([1.0], buckets=[("backwards", 10.0, 5.0)])
    with pytest.raises(ValueError, match="below"):
        age_histogram([1.0], buckets=[("nan", math.nan, 5.0)])


def test_crowded_bucket_names_are_thinned() -> None:
    buckets = [(f"bucket number {i}", float(i), float(i + 1)) for i in range(40)]
    root = parse(age_histogram([0.5, 10.5], buckets=buckets, width=400))
    check_geometry(root)
    assert len(by_class(root, "chart-bar")) == 40
    names = [el for el in by_class(root, "chart-label") if (el.text or "").startswith("bucket")]
    assert 1 < len(names) < 40
    xs = [float(el.attrib["x"]) for el in names]
    widest = max(len(el.text or "") for el in names) * 6
    assert all(b - a >= widest for a, b in itertools.pairwise(xs))


def test_large_counts_use_compact_labels() -> None:
    root = parse(age_histogram([1.0] * 12_345))
    assert by_class(root, "chart-value")[0].text == "12.3k"
    bar = by_class(root, "chart-bar")[0].find(f"{{{NS}}}title")
    assert bar is not None
    assert bar.text == "< 30 d: 12345 exclusions"


# -- properties -----------------------------------------------------------------------

debt_points = st.builds(
    DebtPoint,
    day=st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)),
    count=st.integers(min_value=0, max_value=10**15),
    median_age_days=st.none() | st.floats(min_value=0, max_value=1e300, allow_nan=False),
)
texts = st.text(max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(debt_points, max_size=60),
    st.integers(min_value=320, max_value=2000),
    st.integers(min_value=140, max_value=800),
    texts,
)
def test_debt_chart_property(points: list[DebtPoint], width: int, height: int, title: str) -> None:
    svg = debt_over_time(points, width=width, height=height, title=title)
    root = parse(svg)
    check_geometry(root)
    check_classes(root)
    if len({p.day for p in points}) == len(points):  # else the order of equal days shows
        again = debt_over_time(list(reversed(points)), width=width, height=height, title=title)
        assert again == svg


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=200),
    st.none()
    | st.lists(
        st.tuples(texts, st.floats(-1e6, 1e6), st.floats(0, 1e6)).filter(lambda b: b[1] < b[2]),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=160, max_value=2000),
    st.integers(min_value=120, max_value=800),
    texts,
)
def test_histogram_property(
    ages: list[float],
    buckets: list[tuple[str, float, float]] | None,
    width: int,
    height: int,
    title: str,
) -> None:
    svg = age_histogram(ages, buckets=buckets, width=width, height=height, title=title)
    root = parse(svg)
    check_geometry(root)
    check_classes(root)
    assert len(by_class(root, "chart-bar")) == len(buckets or DEFAULT_AGE_BUCKETS)
    assert age_histogram(ages, buckets=buckets, width=width, height=height, title=title) == svg
