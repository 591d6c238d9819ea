"""Parse Simple API project pages (PEP 691 JSON, PEP 503 HTML) into :class:`ProjectPage` values.

What both formats share is :mod:`govern.index.parsing`. Notes: docs/internals.md#index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.index.model import DistributionFile, ProjectPage
from govern.index.parsing import (
    Notes,
    Resolver,
    SimpleParseError,
    check_api_version,
    file_from,
    is_number,
    parse_version,
    quoted,
    why_not,
)

JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_CONTENT_TYPE = "application/vnd.pypi.simple.v1+html"
LEGACY_HTML_CONTENT_TYPE = "text/html"


# -- PEP 691 JSON ------------------------------------------------------------------------------


def _expect(value: object, kind: type | tuple[type, ...], what: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds:  # the common case: exactly a type asked for
        return value
    if not _is(value, kinds):
        raise SimpleParseError(f"{what} is not a {_type_name(kinds)}")
    return value


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    # bool is an int in Python, but JSON true is never a number here.
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _type_name(kinds: tuple[type, ...]) -> str:
    names = {dict: "object", list: "list", str: "string", int: "number", bool: "boolean"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _field(
    item: Mapping[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    where: str,
    default: object = None,
) -> Any:
    """``item.get(key, default)`` checked by :func:`_expect` as ``<where>.<key>``."""
    value = item.get(key, default)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds:  # the common case, without building the message
        return value
    return _expect(value, kinds, f"{where}.{key}")


def _optional(
    item: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, notes: Notes
) -> Any:
    """``item[key]`` when it is of ``kind``; None when absent, null or of another type (noted)."""
    value = item.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds or _is(value, kinds):
        return value
    notes.add(f"{where}.{key} is not a {_type_name(kinds)}: ignored")
    return None


def _upload_time(value: object, where: str, notes: Notes) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        notes.add(f"{where}.upload-time {quoted(value)} is not an ISO 8601 time: ignored")
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _hashes(item: Mapping[str, Any], where: str, notes: Notes) -> dict[str, str]:
    """PEP 691's ``hashes``: the entries that are a name and a hex digest as strings."""
    value = _optional(item, "hashes", dict, where, notes)
    if not value:
        return {}
    if all(type(v) is str for v in value.values()):  # JSON keys are always strings
        return cast("dict[str, str]", value)
    kept: dict[str, str] = {}
    for algo, digest in value.items():
        if isinstance(digest, str):
            kept[algo] = digest
        else:
            notes.add(f"{where}.hashes.{quoted(algo)} is not a string: ignored")
    return kept


def _json_file(
    entry: object, index: int, *, project: str, resolve: Resolver, notes: Notes
) -> DistributionFile | None:
    where = f"files[{index}]"
    item: dict[str, Any] = _expect(entry, dict, where)
    filename: str = _field(item, "filename", str, where)
    url: str = _field(item, "url", str, where)
    try:
        absolute = resolve(url)
    except ValueError:  # e.g. a malformed IPv6 host: this file cannot be fetched, not a page
        notes.add(f"{where}.url {quoted(url)} is not a URL: file left out")
        return None
    yanked_value = _optional(item, "yanked", (bool, str), where, notes)
    size = _optional(item, "size", int, where, notes)
    if size is not None and size < 0:
        notes.add(f"{where}.size is negative: ignored")
        size = None
    return file_from(
        filename,
        absolute,
        project=project,
        requires_python=_optional(item, "requires-python", str, where, notes),
        yanked=yanked_value is True or isinstance(yanked_value, str),
        yanked_reason=yanked_value if isinstance(yanked_value, str) and yanked_value else None,
        upload_time=_upload_time(_optional(item, "upload-time", str, where, notes), where, notes),
        size=size,
        hashes=_hashes(item, where, notes),
        notes=notes,
    )


def _serial(meta: Mapping[str, Any], notes: Notes) -> int | None:
    """``meta._last-serial``, PyPI's private extension: a number, or a string of digits."""
    value = meta.get("_last-serial")
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, str) and is_number(value.strip()):
        return int(value.strip())  # as the index pip uses answers it: "40603035"
    notes.add(f"meta._last-serial {quoted(value)} is not a serial number: ignored")
    return None


def _versions(root: Mapping[str, Any], notes: Notes) -> tuple[str, ...]:
    """PEP 700's ``versions`` (absent before api-version 1.1): those that are PEP 440."""
    value = _optional(root, "versions", list, "the page", notes)
    kept: list[str] = []
    for i, raw in enumerate(value or ()):
        if not isinstance(raw, str):
            notes.add(f"versions[{i}] is not a string: ignored")
        elif parse_version(raw) is None:
            reason = "not a PEP 440 version"
            try:
                Version(raw)
            except InvalidVersion:
                pass
            except ValueError as exc:
                reason = why_not(exc)
            notes.add(f"versions[{i}] {quoted(raw)}: {reason}: ignored")
        else:
            kept.append(raw)
    return tuple(kept)


def parse_json(data: bytes, *, name: str, base_url: str) -> ProjectPage:
    """A PEP 691 project page (``application/vnd.pypi.simple.v1+json``) as a ProjectPage.

    ``base_url`` is the URL the page was read from (after redirects): relative file URLs
    are resolved against it. ``_last-serial`` (PyPI's ``meta`` extension, a number or a
    string of digits) and PEP 700's ``versions``, ``upload-time`` and ``size`` are read when
    present and usable; what is left out is in the page's ``ignored``.
    """
    project = canonicalize_name(name)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        looks = " (the body looks like HTML)" if _looks_like_html(data) else ""
        raise SimpleParseError(f"not JSON ({type(exc).__name__}){looks}") from None
    root: dict[str, Any] = _expect(document, dict, "the page")
    meta: dict[str, Any] = _expect(root.get("meta", {}), dict, "meta")
    api_version = meta.get("api-version")
    if api_version is not None:
        check_api_version(_expect(api_version, str, "meta.api-version"))
    notes = Notes()
    serial = _serial(meta, notes)
    page_name = root.get("name")
    if page_name is not None:
        _expect(page_name, str, "name")
        if canonicalize_name(page_name) != project:
            raise SimpleParseError(f"the page is for {quoted(page_name)}, not {project!r}")
    files_value: list[Any] = _expect(root.get("files"), list, "files")
    resolve = Resolver(base_url)
    files = tuple(
        file
        for i, entry in enumerate(files_value)
        if (file := _json_file(entry, i, project=project, resolve=resolve, notes=notes)) is not None
    )
    return ProjectPage(
        name=project,
        files=files,
        versions=_versions(root, notes),
        last_serial=serial,
        api_version=api_version,
        format="json",
        ignored=notes.result(),
    )


def _looks_like_html(data: bytes) -> bool:
    """Whether a body starts as markup does (``<``, after white space and a BOM)."""
    return data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


# -- PEP 503 HTML ---------------------------------------------------------------------------


def parse_html(
    data: bytes, *, name: str, base_url: str, encoding: str | None = None
) -> ProjectPage:
    """A PEP 503 project page (``text/html`` or ``application/vnd.pypi.simple.v1+html``).

    Each anchor is a file: the filename is the last path segment of its URL, a
    ``#<algo>=<hex>`` fragment gives its hash, ``data-requires-python`` and ``data-yanked``
    (PEP 592) are read; metadata attributes are ignored. A ``<base href>`` is honoured.
    Hostile markup (scripts, deep nesting, odd entities) is parsed as text, never raised.
    """
    from govern.index.pep503 import parse_page  # html.parser: loaded for HTML pages only

    return parse_page(data, name=name, base_url=base_url, encoding=encoding)
