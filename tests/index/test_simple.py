"""Tests for :mod:`govern.index.simple`: PEP 691 JSON and PEP 503 HTML pages as values."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.tags import Tag
from packaging.version import Version

from fakes.index import hostile_html
from govern.index.model import FileKind, releases
from govern.index.parsing import (
    MAX_NOTES,
    Resolver,
    SimpleParseError,
    api_major,
    file_from,
    split_url,
    strip_credentials,
)
from govern.index.pep503 import _AnchorCollector
from govern.index.simple import parse_html, parse_json

BASE = "https://index.test/simple/demo/"


def page(**overrides: Any) -> bytes:
    """A valid PEP 691 page for "demo", with top-level keys replaced."""
    document: dict[str, Any] = {
        "meta": {"api-version": "1.1", "_last-serial": 42},
        "name": "demo",
        "files": [],
        "versions": [],
    }
    document.update(overrides)
    return json.dumps(document).encode()


def one_file(**fields: Any) -> bytes:
    """A page with a single file entry (filename and url preset, fields replaced)."""
    entry: dict[str, Any] = {
        "filename": "demo-1.0.tar.gz",
        "url": "demo-1.0.tar.gz",
        "hashes": {},
    }
    entry.update(fields)
    return page(files=[entry])


# -- file_from ----------------------------------------------------------------------------------


def test_file_from_reads_wheel_version_and_tags() -> None:
    file = file_from("Demo_Pkg-2.0.1-cp312-cp312-manylinux_2_17_x86_64.whl", "https://h/f.whl")
    assert file.kind is FileKind.WHEEL
    assert file.version == Version("2.0.1")
    assert Tag("cp312", "cp312", "manylinux_2_17_x86_64") in file.tags


@pytest.mark.parametrize("filename", ["demo-1.0.tar.gz", "demo-1.0.zip"])
def test_file_from_reads_sdists(filename: str) -> None:
    file = file_from(filename, "https://h/x")
    assert (file.kind, file.version, file.tags) == (FileKind.SDIST, Version("1.0"), frozenset())


@pytest.mark.parametrize(
    "filename",
    [
        "demo-1.0-py2.7.egg",  # eggs are kept, but not as releases
        "demo-1.0.win32.exe",
        "demo-1.0.tar.bz2",
        "demo.whl",  # InvalidWheelFilename
        "demo-1.0-py3-none.whl",  # too few tags
        "demo-not.a.version-py3-none-any.whl",  # InvalidVersion inside the wheel name
        "demo-.tar.gz",  # InvalidSdistFilename
        "demo-1.0$.zip",
        "",
    ],
)
def test_file_from_keeps_unparseable_names_as_other(filename: str) -> None:
    file = file_from(filename, "https://h/x")
    assert (file.kind, file.version, file.tags) == (FileKind.OTHER, None, frozenset())


def test_file_from_refuses_another_projects_file() -> None:
    assert file_from("other-1.0.tar.gz", "https://h/x", project="demo").version is None
    same = file_from("Demo-1.0.tar.gz", "https://h/x", project="DEMO")
    assert same.version == Version("1.0")


def test_file_from_strips_credentials_and_keeps_details() -> None:
    file = file_from(
        "demo-1.0.tar.gz",
        "https://user:s3cret@host.test/files/demo-1.0.tar.gz",
        yanked_reason="broken",
        size=12,
        hashes={"sha256": "ab"},
    )
    assert file.url == "https://host.test/files/demo-1.0.tar.gz"
    assert (file.yanked, file.yanked_reason, file.size) == (True, "broken", 12)
    assert file.hashes == {"sha256": "ab"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://u:p@h/simple/", "https://h/simple/"),
        ("https://token@h:8443/simple/", "https://h:8443/simple/"),
        ("https://u:p@ss@h/x?a=b@c", "https://h/x?a=b@c"),  # the last @ of the authority
        ("https://h/path@not-userinfo", "https://h/path@not-userinfo"),
        ("relative/path", "relative/path"),
    ],
)
def test_strip_credentials(url: str, expected: str) -> None:
    assert strip_credentials(url) == expected


# -- PEP 691 JSON -------------------------------------------------------------------------------


def test_parse_json_reads_every_field() -> None:
    data = page(
        name="Demo",
        versions=["1.0", "1.1", "2.0"],  # 2.0 has no file: PEP 700 allows it
        files=[
            {
                "filename": "demo-1.0-py3-none-any.whl",
                "url": "../../files/demo-1.0-py3-none-any.whl",
                "hashes": {"sha256": "aa" * 32},
                "requires-python": ">=3.8",
                "upload-time": "2024-03-01T12:30:00.123456Z",
                "size": 1234,
                "core-metadata": {"sha256": "bb" * 32},
            },
            {
                "filename": "demo-1.1.tar.gz",
                "url": "https://user:s3cret@files.test/demo-1.1.tar.gz",
                "hashes": {},
                "yanked": "ships a broken C extension",
            },
            {
                "filename": "demo-1.1-py3-none-any.whl",
                "url": "/files/demo-1.1-py3-none-any.whl",
                "hashes": {},
                "yanked": True,
            },
        ],
    )
    result = parse_json(data, name="DEMO", base_url=BASE)
    assert (result.name, result.format, result.api_version, result.last_serial) == (
        "demo",
        "json",
        "1.1",
        42,
    )
    assert result.versions == ("1.0", "1.1", "2.0")
    wheel, sdist, yanked_wheel = result.files
    assert wheel.url == "https://index.test/files/demo-1.0-py3-none-any.whl"
    assert wheel.hashes == {"sha256": "aa" * 32}
    assert wheel.requires_python == ">=3.8"
    assert wheel.upload_time == datetime(2024, 3, 1, 12, 30, 0, 123456, tzinfo=UTC)
    assert (wheel.size, wheel.yanked, wheel.yanked_reason) == (1234, False, None)
    assert sdist.url == "https://files.test/demo-1.1.tar.gz"
    assert (sdist.yanked, sdist.yanked_reason) == (True, "ships a broken C extension")
    assert yanked_wheel.url == "https://index.test/files/demo-1.1-py3-none-any.whl"
    assert (yanked_wheel.yanked, yanked_wheel.yanked_reason) == (True, None)
    one, one_one = releases(result.files)
    assert (one.version, one.yanked) == (Version("1.0"), False)
    assert (one_one.yanked, one_one.yanked_reason) == (True, "ships a broken C extension")


def test_parse_json_accepts_the_minimal_page() -> None:
    minimal = json.dumps({"meta": {"api-version": "1.0"}, "name": "demo", "files": []})
    result = parse_json(minimal.encode(), name="demo", base_url=BASE)
    assert (result.files, result.versions, result.last_serial) == ((), (), None)


def test_parse_json_canonicalizes_the_name() -> None:
    data = page(name="CuPy_cuda13x")
    assert parse_json(data, name="cupy.cuda13x", base_url=BASE).name == "cupy-cuda13x"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe\x00", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # nesting deeper than the recursion
        (b"[]", "the page is not a object"),
        (page(meta=[]), "meta is not a object"),
        (page(meta={"api-version": 1}), "meta.api-version is not a string"),
        (page(meta={"api-version": "2.0"}), "newer than this govern reads"),
        (page(meta={"api-version": "one"}), "is not a version"),
        (page(name="other"), "the page is for 'other'"),
        (page(name=3), "name is not a string"),
        (page(files={}), "files is not a list"),
        (page(files=None), "files is not a list"),
        (page(files=["demo-1.0.tar.gz"]), "files[0] is not a object"),
        (one_file(filename=None), "files[0].filename is not a string"),
        (one_file(url=1), "files[0].url is not a string"),
    ],
)
def test_parse_json_refuses_invalid_pages(data: bytes, message: str) -> None:
    with pytest.raises(SimpleParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_json(data, name="demo", base_url=BASE)


def test_parse_json_error_messages_stay_short() -> None:
    data = one_file(filename="x" * 10_000, url=None)
    with pytest.raises(SimpleParseError) as raised:
        parse_json(data, name="demo", base_url=BASE)
    assert len(str(raised.value)) < 200


def test_last_serial_as_a_string_of_digits_is_that_number() -> None:
    # What the index pip uses answers: {"api-version": "1.1", "_last-serial": "40603035"}.
    data = page(meta={"api-version": "1.1", "_last-serial": "40603035"})
    result = parse_json(data, name="demo", base_url=BASE)
    assert (result.last_serial, result.ignored) == (40603035, ())


@pytest.mark.parametrize("serial", ["7a", "", "-3", -3, True, 1.5, [7], {"n": 7}, "9" * 100])
def test_an_unusable_last_serial_is_ignored(serial: object) -> None:
    result = parse_json(page(meta={"_last-serial": serial}), name="demo", base_url=BASE)
    assert result.last_serial is None
    assert len(result.ignored) == 1
    assert result.ignored[0].startswith("meta._last-serial ")
    assert result.ignored[0].endswith("is not a serial number: ignored")


# An optional field that is unusable: the file stays, without it, and the page says why.
@pytest.mark.parametrize(
    ("fields", "note"),
    [
        ({"hashes": []}, "files[0].hashes is not a object: ignored"),
        ({"hashes": {"sha256": 1}}, "files[0].hashes.'sha256' is not a string: ignored"),
        ({"requires-python": 3}, "files[0].requires-python is not a string: ignored"),
        ({"yanked": 1}, "files[0].yanked is not a boolean or string: ignored"),
        ({"yanked": {"reason": "x"}}, "files[0].yanked is not a boolean or string: ignored"),
        ({"size": "12"}, "files[0].size is not a number: ignored"),
        ({"size": True}, "files[0].size is not a number: ignored"),
        ({"size": -1}, "files[0].size is negative: ignored"),
        ({"upload-time": 1700000000}, "files[0].upload-time is not a string: ignored"),
        ({"upload-time": "yesterday"}, "files[0].upload-time 'yesterday' is not an ISO"),
    ],
)
def test_an_unusable_optional_file_field_is_dropped_not_the_page(
    fields: dict[str, Any], note: str
) -> None:
    result = parse_json(one_file(**fields), name="demo", base_url=BASE)
    (file,) = result.files
    assert (file.filename, file.version) == ("demo-1.0.tar.gz", Version("1.0"))
    assert (file.size, file.upload_time, file.requires_python, file.yanked) == (
        None,
        None,
        None,
        False,
    )
    assert dict(file.hashes) == {}
    assert len(result.ignored) == 1
    assert result.ignored[0].startswith(note)


@pytest.mark.parametrize(
    "fields",
    [
        {"data-dist-info-metadata": True},
        {"data-dist-info-metadata": {"sha256": "ff"}},
        {"core-metadata": False},
        {"core-metadata": {"sha256": "ff"}},
        {"dist-info-metadata": "yes"},
        {"gpg-sig": "maybe"},
        {"provenance": 7},
        {"an-unknown-key": [1, 2]},
        {"requires-python": ">=3.8,,<4 not a specifier"},
        {"hashes": {}},
    ],
)
def test_metadata_fields_unknown_keys_and_odd_specifiers_change_nothing(
    fields: dict[str, Any],
) -> None:
    result = parse_json(one_file(**fields), name="demo", base_url=BASE)
    assert [f.version for f in result.files] == [Version("1.0")]
    assert result.ignored == ()


def test_yanked_as_a_reason_string_is_yanked_with_that_reason() -> None:
    (file,) = parse_json(one_file(yanked="broken build"), name="demo", base_url=BASE).files
    assert (file.yanked, file.yanked_reason) == (True, "broken build")


def test_a_file_whose_url_cannot_be_resolved_is_left_out_with_a_reason() -> None:
    data = page(
        files=[
            {"filename": "demo-1.0.tar.gz", "url": "http://[::1/x", "hashes": {}},
            {"filename": "demo-1.1.tar.gz", "url": "demo-1.1.tar.gz", "hashes": {}},
        ]
    )
    result = parse_json(data, name="demo", base_url=BASE)
    assert [f.filename for f in result.files] == ["demo-1.1.tar.gz"]
    assert result.ignored == ("files[0].url 'http://[::1/x' is not a URL: file left out",)


def test_versions_absent_on_api_1_0_is_no_versions() -> None:
    data = json.dumps({"meta": {"api-version": "1.0"}, "name": "demo", "files": []}).encode()
    result = parse_json(data, name="demo", base_url=BASE)
    assert (result.versions, result.ignored) == ((), ())


@pytest.mark.parametrize(
    ("versions", "kept", "note"),
    [
        ("1.0", (), "the page.versions is not a list: ignored"),
        ({"1.0": True}, (), "the page.versions is not a list: ignored"),
        ([1.0, "1.1"], ("1.1",), "versions[0] is not a string: ignored"),
        (["not.a-version!", "1.1"], ("1.1",), "versions[0] 'not.a-version!': not a PEP 440"),
        (["1" * 5000, "1.1"], ("1.1",), "versions[0] '1111"),
    ],
)
def test_versions_that_are_not_pep_440_are_left_out_with_a_reason(
    versions: object, kept: tuple[str, ...], note: str
) -> None:
    result = parse_json(page(versions=versions), name="demo", base_url=BASE)
    assert result.versions == kept
    assert len(result.ignored) == 1
    assert result.ignored[0].startswith(note)
    assert len(result.ignored[0]) < 200


def test_a_version_past_the_integer_string_limit_is_skipped_with_a_reason() -> None:
    huge = "1" * (sys.get_int_max_str_digits() + 1)
    data = page(
        files=[
            {"filename": f"demo-{huge}.tar.gz", "url": "a.tar.gz", "hashes": {}},
            {"filename": f"demo-{huge}-py3-none-any.whl", "url": "b.whl", "hashes": {}},
            {"filename": "demo-1.0.tar.gz", "url": "demo-1.0.tar.gz", "hashes": {}},
        ],
        versions=[huge, "1.0"],
    )
    result = parse_json(data, name="demo", base_url=BASE)
    assert [f.version for f in result.files] == [None, None, Version("1.0")]
    assert [f.kind for f in result.files] == [FileKind.OTHER, FileKind.OTHER, FileKind.SDIST]
    assert result.versions == ("1.0",)
    limit = f"a version number over {sys.get_int_max_str_digits()} digits"
    assert len(result.ignored) == 3
    assert all(limit in note for note in result.ignored), result.ignored
    assert all(len(note) < 200 for note in result.ignored)


def test_a_page_of_many_bad_fields_keeps_a_bounded_list_of_reasons() -> None:
    entries = [
        {"filename": f"demo-1.{i}.tar.gz", "url": f"d{i}.tar.gz", "hashes": {}, "size": "x"}
        for i in range(1000)
    ]
    result = parse_json(page(files=entries), name="demo", base_url=BASE)
    assert len(result.files) == 1000
    assert len(result.ignored) == MAX_NOTES + 1
    assert result.ignored[-1] == f"and {1000 - MAX_NOTES} more"


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner)
)
_FILE_KEYS = ["filename", "url", "hashes", "requires-python", "yanked", "upload-time", "size"]
_PAGES = st.fixed_dictionaries(
    {},
    optional={
        "meta": st.dictionaries(st.sampled_from(["api-version", "_last-serial"]), _VALUES),
        "name": st.sampled_from(["demo", "Demo", "other"]) | _VALUES,
        "files": st.lists(
            st.dictionaries(
                st.sampled_from(_FILE_KEYS),
                _VALUES | st.sampled_from(["demo-1.0.tar.gz", "2024-01-01T00:00:00Z"]),
            )
            | _VALUES,
            max_size=3,
        )
        | _VALUES,
        "versions": st.lists(_SCALARS, max_size=3) | _VALUES,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200).map(lambda raw: (raw,)) | _PAGES | _VALUES)
def test_parse_json_raises_only_parse_errors(data: Any) -> None:
    raw = data[0] if isinstance(data, tuple) else json.dumps(data).encode()
    with contextlib.suppress(SimpleParseError):
        parse_json(raw, name="demo", base_url=BASE)


# -- PEP 503 HTML -------------------------------------------------------------------------------


HTML = b"""<!DOCTYPE html>
<html><head><meta name="pypi:repository-version" content="1.0"><title>demo</title></head>
<body>
<a href="../../files/demo-1.0.tar.gz#sha256=ABCDEF0123" data-requires-python="&gt;=3.8,&lt;4"
   data-dist-info-metadata="sha256=ff" data-core-metadata="true">demo-1.0.tar.gz</a><br>
<a href="https://user:s3cret@files.test/demo-1.1-py3-none-any.whl" data-yanked="">whl</a>
<a href="/files/demo-1.2.zip" data-yanked="bad &amp; broken">demo-1.2.zip</a>
<A HREF="demo-1.3.tar.gz#md5=00ff">uppercase tags are still anchors</A>
<a href="demo%2D1.4.tar.gz">percent-encoded name</a>
<a>no href</a><a href="">empty href</a>
</body></html>
"""


def test_parse_html_reads_anchors() -> None:
    result = parse_html(HTML, name="Demo", base_url=BASE)
    assert (result.name, result.format, result.api_version) == ("demo", "html", "1.0")
    assert [f.filename for f in result.files] == [
        "demo-1.0.tar.gz",
        "demo-1.1-py3-none-any.whl",
        "demo-1.2.zip",
        "demo-1.3.tar.gz",
        "demo-1.4.tar.gz",
    ]
    sdist, wheel, zipped, upper, encoded = result.files
    assert sdist.url == "https://index.test/files/demo-1.0.tar.gz"
    assert sdist.hashes == {"sha256": "abcdef0123"}
    assert sdist.requires_python == ">=3.8,<4"
    assert (sdist.yanked, sdist.version) == (False, Version("1.0"))
    assert wheel.url == "https://files.test/demo-1.1-py3-none-any.whl"
    assert (wheel.yanked, wheel.yanked_reason, wheel.kind) == (True, None, FileKind.WHEEL)
    assert zipped.url == "https://index.test/files/demo-1.2.zip"
    assert (zipped.yanked, zipped.yanked_reason) == (True, "bad & broken")
    assert upper.url == "https://index.test/simple/demo/demo-1.3.tar.gz"
    assert upper.hashes == {"md5": "00ff"}
    assert encoded.version == Version("1.4")
    assert "s3cret" not in repr(result)


def test_parse_html_honours_the_first_base_href() -> None:
    data = (
        b'<html><head><base href="https://mirror.test/pkgs/"><base href="https://no.test/">'
        b'</head><a href="demo-1.0.tar.gz">x</a><a href="/abs/demo-2.0.tar.gz">y</a></html>'
    )
    first, second = parse_html(data, name="demo", base_url=BASE).files
    assert first.url == "https://mirror.test/pkgs/demo-1.0.tar.gz"
    assert second.url == "https://mirror.test/abs/demo-2.0.tar.gz"


def test_parse_html_ignores_a_malformed_base_href() -> None:
    data = b'<base href="http://[::1"><a href="demo-1.0.tar.gz">x</a>'
    (file,) = parse_html(data, name="demo", base_url=BASE).files
    assert file.url == BASE + "demo-1.0.tar.gz"


def test_parse_html_refuses_a_newer_major_version() -> None:
    data = b'<meta name="pypi:repository-version" content="2.0"><a href="demo-1.0.tar.gz">x</a>'
    with pytest.raises(SimpleParseError, match="newer than this govern reads"):
        parse_html(data, name="demo", base_url=BASE)


def test_parse_html_uses_the_declared_encoding() -> None:
    data = '<a href="demo-1.0.tar.gz" data-yanked="caf\u00e9">x</a>'.encode("latin-1")
    (file,) = parse_html(data, name="demo", base_url=BASE, encoding="latin-1").files
    assert file.yanked_reason == "caf\u00e9"
    (fallback,) = parse_html(data, name="demo", base_url=BASE, encoding="no-such-codec").files
    assert fallback.yanked_reason == "caf\ufffd"


def test_parse_html_survives_hostile_markup() -> None:
    started = time.perf_counter()
    result = parse_html(hostile_html("demo", "demo-1.0.tar.gz"), name="demo", base_url=BASE)
    assert time.perf_counter() - started < 2
    (file,) = result.files  # not the ones in the script, the style, the comment or CDATA
    assert file.filename == "demo-1.0.tar.gz"
    assert file.requires_python == ">=3.8"


@pytest.mark.parametrize(
    "unit",
    [b"<!--", b"<!", b"<?", b"<![", b"</", b"<", b"<a", b'<a href="', b"<a b=c ", b"</a ", b"&#"],
)
def test_parse_html_is_linear_on_unterminated_constructs(unit: bytes) -> None:
    # Python's own HTMLParser rescans these quadratically on older patch releases;
    # 2 MB of them must still parse in well under a second or two.
    data = unit * (2_000_000 // len(unit))
    started = time.perf_counter()
    with contextlib.suppress(SimpleParseError):
        parse_html(data, name="demo", base_url=BASE)
    assert time.perf_counter() - started < 3


_HTML_PIECES = "<a |href=|\"|'|>|<|</a>|<!--|-->|<script>|</script>|&|#|;|=| |x-1.0.tar.gz"
_HTML_PIECES += "|data-yanked|<base href=|\x00|<![CDATA[|]]>|<?|/|\n|&#x|99999999999|<meta "


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(_HTML_PIECES.split("|")) | st.text(max_size=5),
        max_size=60,
    ).map("".join)
)
def test_parse_html_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(SimpleParseError):
        parse_html(text.encode(), name="x", base_url=BASE)


_WELL_FORMED = [
    '<a href="x-1.0.tar.gz#sha256=ab">x</a>',
    "<a href='y-2.0.zip' data-yanked>y</a>",
    '<A HREF=z-3.0.tar.gz data-requires-python="&gt;=3">z</A>',
    '<a data-yanked="why &amp; how" href="w-1.whl">w</a>',
    "<!-- <a href=hidden-1.0.tar.gz> -->",
    "<script>var s = '<a href=\"in-script.tar.gz\">';</script>",
    "<style>a::after { content: '<a href=s>' }</style>",
    '<base href="/b/">',
    '<meta name="pypi:repository-version" content="1.0">',
    "<!DOCTYPE html>",
    "<p>text &amp; more</p>",
    "<br/>",
    "\n",
    "<title>Links</title>",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_WELL_FORMED), max_size=12).map("".join))
def test_the_prescan_finds_what_htmlparser_finds(text: str) -> None:
    # On well-formed pages the linear pre-scan changes nothing: the same anchors, base and
    # repository version as HTMLParser fed the whole document (what pip does).
    reference = _AnchorCollector()
    reference.feed(text)
    reference.close()
    if not re.search(r"<[!?A-Za-z]", text):  # no markup: not an HTML page at all
        with pytest.raises(SimpleParseError, match="no HTML markup"):
            parse_html(text.encode(), name="x", base_url=BASE)
        return
    result = parse_html(text.encode(), name="x", base_url=BASE)
    expected = [
        ((a["href"] or "").split("#")[0].rsplit("/", 1)[-1], a.get("data-requires-python"))
        for a in reference.anchors
    ]
    yanked = ["data-yanked" in a for a in reference.anchors]
    assert [(f.url.rsplit("/", 1)[-1], f.requires_python) for f in result.files] == expected
    assert [f.yanked for f in result.files] == yanked
    usable = reference.api_version is not None and api_major(reference.api_version) is not None
    assert result.api_version == (reference.api_version if usable else None)
    prefix = "https://index.test" + (reference.base_href or "/simple/demo/")
    assert all(f.url.startswith(prefix) for f in result.files)


# -- URL resolution -----------------------------------------------------------------------------
# File URLs are resolved without urljoin when it would change nothing (a plain absolute URL)
# or only join the folder (a plain relative one, its folder joined once per page): the
# result must be urljoin's, character for character, or the same ValueError.

_URL_PIECES = [
    *("/", "//", ".", "..", "./", "../", ":", ";", "?", "#", "%", "%2F", "@", "=", "&"),
    *(" ", "\t", "\n", "\x00", "\x7f", "\\", "[", "]", "[::1]", "\u00e9", "\u2100"),
    *("http:", "https:", "HTTPS:", "ftp:", "https://", "http://", "//h", "host", "h.test"),
    *("a", "demo-1.0.tar.gz", "demo-1.0-py3-none-any.whl", "sha256=ab", "8080", "q=1"),
]
_URLS = st.lists(st.sampled_from(_URL_PIECES), max_size=8).map("".join)
_BASES = (
    st.sampled_from(
        [
            BASE,
            "http://127.0.0.1:8080/simple/pkg-00001/",
            "https://h",
            "https://h/a",
            "https://h/a/b?x=1#f",
            "https://u:p@h/s/",
            "https://h/a;p/b/",
            "HTTPS://H/x/",
            "http://[::1]/s/",
            "http://[::1/s/",
            "https:///no-host/",
            "file:///x/y/",
            "relative/base/",
            "",
        ]
    )
    | _URLS
)


def _outcome(join: Any, *args: str) -> Any:
    try:
        return join(*args)
    except ValueError:
        return ValueError


@settings(max_examples=1000, deadline=None)
@given(_BASES, st.lists(_URLS, min_size=1, max_size=4))
def test_resolved_urls_are_urljoins(base: str, urls: list[str]) -> None:
    resolve = Resolver(base)
    for url in [*urls, *urls]:  # again: the folders joined before are reused
        assert _outcome(resolve, url) == _outcome(urljoin, base, url), url


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://[::1/s/", "https://files.test/x"),  # urljoin cannot parse the base: raises
        ("http://[::1/s/", "x/demo-1.0.tar.gz"),
        (BASE, "//x"),  # a host, not a folder
        (BASE, "//h/a/../b"),
        (BASE, "https://files.test/a;"),  # urljoin drops an empty ";", "?" or "#"
        (BASE, "https://files.test/a;b"),
        (BASE, "https://files.test/a?#"),
        (BASE, "https://files.test/a?q#"),
        (BASE, "https://files.test?q"),
        (BASE, "x:/demo-1.0.tar.gz"),  # a scheme
        (BASE, "a/:b"),
        (BASE, "a/..."),
        (BASE, "a/../.."),
        ("https://h", "../x/y"),  # a base without a path
        ("https://h/a/b?q=1#f", "c/d"),  # the base's query and fragment go
        ("https://h/a;p/b", "c/d"),
        ("ftp://h/a/", "b/c"),
        ("file:///x/y/", "https://files.test/z"),
        ("", "a/b"),
    ],
)
def test_resolved_urls_are_urljoins_in_the_corners(base: str, url: str) -> None:
    resolve = Resolver(base)
    assert _outcome(resolve, "z/demo-1.0.tar.gz") == _outcome(urljoin, base, "z/demo-1.0.tar.gz")
    for _ in range(2):
        assert _outcome(resolve, url) == _outcome(urljoin, base, url)


@settings(max_examples=1000, deadline=None)
@given(_URLS)
def test_split_urls_are_urldefrags(url: str) -> None:
    def reference(url: str) -> tuple[str, str, str]:
        absolute, fragment = urldefrag(url)
        return absolute, fragment, urlsplit(absolute).path

    assert _outcome(split_url, url) == _outcome(reference, url)


@pytest.mark.parametrize(
    "url",
    [
        "../../files/demo-1.0.tar.gz",
        "../../files/other/demo-1.0.tar.gz",  # another folder: not the first one's join
        "demo-1.0.tar.gz",
        "./demo-1.0.tar.gz",
        "/files/demo-1.0.tar.gz",
        "../../files/demo-1.0.tar.gz#sha256=ab",
        "../../files/./x/../demo-1.0.tar.gz",
        "../../files/..",
        "../../files/.",
        "../../files/demo-1.0.tar.gz?",
        "../../files/demo-1.0.tar.gz#",
        "../../files/demo-1.0.tar.gz;x",
        "//mirror.test/files/demo-1.0.tar.gz",
        "https://files.test/demo-1.0.tar.gz",
        "https://files.test/demo-1.0.tar.gz?",
        "https://files.test/demo-1.0.tar.gz#",
        "https://files.test/a;b",
        "https://files.test/a;",
        "//x",
        "HTTPS://Files.test/demo-1.0.tar.gz",
        "https://files.test",
        "http://[::1/x",
    ],
)
def test_every_file_url_of_a_page_is_urljoin_of_the_page_url(url: str) -> None:
    files = [
        {"filename": "demo-1.0.tar.gz", "url": "../../files/demo-1.0.tar.gz"},
        {"filename": "demo-1.0.tar.gz", "url": url},
    ]
    expected = _outcome(urljoin, BASE, url)
    if expected is ValueError:  # that file is left out, with the reason
        result = parse_json(page(files=files), name="demo", base_url=BASE)
        assert len(result.files) == 1
        assert result.ignored[0].endswith("is not a URL: file left out")
        return
    first, second = parse_json(page(files=files), name="demo", base_url=BASE).files
    assert first.url == "https://index.test/files/demo-1.0.tar.gz"
    assert second.url == expected


# -- bodies that are not what their content type says ---------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"meta": {"api-version": "1.1"}, "name": "demo", "files": []}', "the body is JSON"),
        (b'\xef\xbb\xbf  [{"filename": "demo-1.0.tar.gz"}]', "the body is JSON"),
        (b"", "no HTML markup"),
        (b"\x00\x01garbage \xff\xfe not a page", "no HTML markup"),
        (b"demo-1.0.tar.gz demo-1.1.tar.gz", "no HTML markup"),
    ],
)
def test_a_body_labelled_html_that_is_not_html_is_refused(body: bytes, message: str) -> None:
    with pytest.raises(SimpleParseError, match=message):
        parse_html(body, name="demo", base_url=BASE)


def test_an_html_page_without_files_is_still_a_page() -> None:
    result = parse_html(b"<!DOCTYPE html><html><body></body></html>", name="demo", base_url=BASE)
    assert result.files == ()


def test_html_labelled_json_is_refused_saying_it_looks_like_html() -> None:
    with pytest.raises(SimpleParseError, match=r"not JSON \(JSONDecodeError\) \(the body looks"):
        parse_json(HTML, name="demo", base_url=BASE)


def test_an_unreadable_repository_version_is_ignored_not_the_page() -> None:
    data = b'<meta name="pypi:repository-version" content="one"><a href="demo-1.0.tar.gz">x</a>'
    result = parse_html(data, name="demo", base_url=BASE)
    assert [f.filename for f in result.files] == ["demo-1.0.tar.gz"]
    assert result.api_version is None
    assert result.ignored == ("pypi:repository-version 'one' is not a version: ignored",)


def test_html_file_names_past_the_integer_string_limit_are_skipped_with_a_reason() -> None:
    huge = "9" * 5000
    data = f'<a href="demo-{huge}.tar.gz">x</a><a href="demo-1.0.tar.gz">y</a>'.encode()
    result = parse_html(data, name="demo", base_url=BASE)
    assert [f.version for f in result.files] == [None, Version("1.0")]
    (note,) = result.ignored
    assert "a version number over" in note
    assert len(note) < 200
