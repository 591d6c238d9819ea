"""How a repository's configuration says its annotations are read: the comment style
(:class:`CommentSettings`), short references (:class:`LinkContext`), annotations given in
configuration for files that cannot carry comments (:class:`ConfigAnnotation`), and the
relaxation strategies a line may name. Values only: the configuration imports this, not the
comment reader (:mod:`govern.exclusions.annotations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The relaxation strategies (edit/relax.py): ``strategy=``, ``relax-strategy``.
STRATEGY_CHOICES = ("exclude", "keep-ceiling")


@dataclass(frozen=True, slots=True)
class LinkContext:
    """How to resolve short references: the repository's forge and bug tracker."""

    forge: str | None = None  # e.g. https://github.com/vllm-project/vllm
    forge_host: str = "https://github.com"
    bug_url: str | None = None  # e.g. https://bugs.launchpad.net/bugs/{id}


@dataclass(frozen=True, slots=True)
class CommentSettings:
    """How a repository writes its comments (``[tool.govern]``)."""

    style: str = "above"  # "above": blocks above a line; "below": blocks below it
    scope: str = "group"  # "group": a block covers the run below it; "line": one line
    inline: str = "auto"  # "auto": licence tags ignored; "reason"; "ignore"
    links: LinkContext = field(default_factory=LinkContext)


@dataclass(frozen=True, slots=True)
class ConfigAnnotation:
    """An annotation given in configuration, for files that cannot carry comments."""

    package: str
    source: str | None = None  # a glob over source paths; None matches every source
    clause: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
