"""Tests for :mod:`govern.errors`: the tree drawn in its docstring is the tree of classes."""

from __future__ import annotations

import importlib
import pkgutil
import re

import govern
from govern import errors
from govern.errors import (
    CI_ERRORS,
    FORGE_ERRORS,
    ForgeRateLimited,
    GovernError,
    IndexUnavailable,
    NotifyUnavailable,
    PackageIndexError,
    RemoteAuthError,
    RemoteRateLimited,
    RemoteUnavailable,
)
from govern.index.pipconfig import IndexNotConfigured

_ROW = re.compile(
    r"^    (?P<indent>(?:[│ ]   |[├└]── )*)(?P<name>[A-Z]\w*)(?:\s+\+ (?P<also>[A-Z]\w*))?"
)

#: a class's parent as drawn (its first base), and its other parents ("+ Name")
Parents = tuple[str | None, tuple[str, ...]]


def drawn() -> dict[str, Parents]:
    """Each class named in the docstring's tree, with the class drawn as its parent and
    the second parent written after it (``+ RemoteAuthError``)."""
    parents: dict[str, Parents] = {}
    trail: list[str] = []
    doc = errors.__doc__ or ""
    for line in doc.split("::\n", 1)[1].splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4
        del trail[depth:]
        also = (match["also"],) if match["also"] else ()
        parents[match["name"]] = (trail[-1] if trail else None, also)
        trail.append(match["name"])
    return parents


def defined() -> dict[str, Parents]:
    """Each public error class of govern (every module imported), with its bases."""
    for module in pkgutil.walk_packages(govern.__path__, "govern."):
        importlib.import_module(module.name)
    parents: dict[str, Parents] = {"GovernError": (None, ())}
    todo = [GovernError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("govern.") and not sub.__name__.startswith("_"):
                first, *others = (base.__name__ for base in sub.__bases__)
                parents[sub.__name__] = (first, tuple(others))
                todo.append(sub)
    return parents


def test_the_docstring_draws_every_error_class_under_its_parent() -> None:
    assert drawn() == defined()


def test_the_drawing_is_read_as_a_tree() -> None:
    tree = drawn()
    assert tree["GovernError"] == (None, ())
    assert tree["SchemaOutOfDate"] == ("StoreError", ())
    assert tree["CIRateLimited"] == ("CIError", ("RemoteRateLimited",))
    assert tree["LockLost"] == ("GovernError", ())


def test_every_index_error_has_the_index_root() -> None:
    assert issubclass(IndexUnavailable, PackageIndexError)
    assert issubclass(IndexNotConfigured, PackageIndexError)
    assert str(IndexNotConfigured("no package index is configured")) == (
        "no package index is configured"
    )


def test_each_system_s_remote_errors_are_caught_by_its_root_and_by_their_kind() -> None:
    for family in (CI_ERRORS, FORGE_ERRORS):
        for cls in (family.auth, family.rate_limited, family.unavailable):
            assert issubclass(cls, family.error)
    assert issubclass(FORGE_ERRORS.rate_limited, RemoteRateLimited)
    assert issubclass(CI_ERRORS.auth, RemoteAuthError)
    assert issubclass(NotifyUnavailable, RemoteUnavailable)
    limited = ForgeRateLimited("github: rate limited", until=None, status=403)
    assert (limited.status, limited.until) == (403, None)
    unsent = NotifyUnavailable("webhook: no answer", maybe_sent=True, status=503)
    assert (unsent.maybe_sent, unsent.status) == (True, 503)
