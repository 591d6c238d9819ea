"""Tests for :mod:`govern.errors`: the tree drawn in its docstring is the tree of classes."""

from __future__ import annotations

import importlib
import pkgutil
import re

import govern
from govern import errors
from govern.errors import GovernError, IndexUnavailable, PackageIndexError
from govern.index.pipconfig import IndexNotConfigured

_ROW = re.compile(r"^    (?P<indent>(?:[│ ]   |[├└]── )*)(?P<name>[A-Z]\w*)\s")


def drawn() -> dict[str, str | None]:
    """Each class named in the docstring's tree, with the class drawn as its parent."""
    parents: dict[str, str | None] = {}
    trail: list[str] = []
    doc = errors.__doc__ or ""
    for line in doc.split("::\n", 1)[1].splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 4
        del trail[depth:]
        parents[match["name"]] = trail[-1] if trail else None
        trail.append(match["name"])
    return parents


def defined() -> dict[str, str | None]:
    """Each public error class of govern (every module imported), with its parent."""
    for module in pkgutil.walk_packages(govern.__path__, "govern."):
        importlib.import_module(module.name)
    parents: dict[str, str | None] = {"GovernError": None}
    todo = [GovernError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("govern.") and not sub.__name__.startswith("_"):
                parents[sub.__name__] = cls.__name__
                todo.append(sub)
    return parents


def test_the_docstring_draws_every_error_class_under_its_parent() -> None:
    assert drawn() == defined()


def test_the_drawing_is_read_as_a_tree() -> None:
    tree = drawn()
    assert tree["GovernError"] is None
    assert tree["SchemaOutOfDate"] == "StoreError"
    assert tree["CIRateLimited"] == "CIError"
    assert tree["LockLost"] == "GovernError"


def test_every_index_error_has_the_index_root() -> None:
    assert issubclass(IndexUnavailable, PackageIndexError)
    assert issubclass(IndexNotConfigured, PackageIndexError)
    assert str(IndexNotConfigured("no package index is configured")) == (
        "no package index is configured"
    )
