"""Configuration: ``[tool.govern]`` in ``pyproject.toml``, or a ``.govern.toml``.

Read once per run from the audited root; invalid configuration is a
:class:`~govern.errors.ConfigError` (exit 2), never silently ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, Specifier

from govern.errors import ConfigError
from govern.exclusions.annotations import CommentSettings, ConfigAnnotation
from govern.exclusions.links import LinkContext

_KEYS = {
    "policy",
    "include",
    "exclude",
    "repository",
    "forge",
    "bug-url",
    "comment-style",
    "comment-scope",
    "inline-comments",
    "allow-includes-outside-root",
    "fail-on",
    "annotations",
}
_ANNOTATION_KEYS = {
    "package",
    "source",
    "clause",
    "reason",
    "links",
    "issue",
    "bad",
    "owner",
    "review-by",
    "verify",
    "profiles",
    "ignore",
}
_CHOICES = {
    "comment-style": ("above", "below"),
    "comment-scope": ("group", "line"),
    "inline-comments": ("auto", "reason", "ignore"),
}


@dataclass(frozen=True, slots=True)
class Config:
    """The settings of one repository (all optional)."""

    path: Path | None = None
    policy: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    repository: str | None = None
    forge: str | None = None
    bug_url: str | None = None
    comment_style: str = "above"
    comment_scope: str = "group"
    inline_comments: str = "auto"
    allow_includes_outside_root: bool = False
    fail_on: str | None = None
    annotations: tuple[ConfigAnnotation, ...] = ()

    @property
    def comments(self) -> CommentSettings:
        """How comments are read into annotations."""
        return CommentSettings(
            style=self.comment_style,
            scope=self.comment_scope,
            inline=self.inline_comments,
            links=LinkContext(forge=self.forge, bug_url=self.bug_url),
        )


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: {key} must be a string or a list of strings")


def _annotation(item: Any, where: str) -> ConfigAnnotation:
    if not isinstance(item, dict) or not isinstance(item.get("package"), str):
        raise ConfigError(
            f'{where}: each [[annotations]] entry needs package = "name"',
            tip="See the README section 'Annotations for generated files'.",
        )
    unknown = set(item) - _ANNOTATION_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown annotation key(s) {', '.join(sorted(unknown))}",
            tip=f"Known keys: {', '.join(sorted(_ANNOTATION_KEYS))}.",
        )
    fields: dict[str, Any] = {}
    for key in ("reason", "owner", "verify"):
        if key in item:
            fields[key] = str(item[key])
    for key, target in (
        ("links", "links"),
        ("issue", "links"),
        ("bad", "bad"),
        ("profiles", "profiles"),
        ("ignore", "ignore"),
    ):
        if key in item:
            fields.setdefault(target, ())
            fields[target] = (*fields[target], *_strings(item[key], key, where))
    if "review-by" in item:
        value = item["review-by"]
        try:
            fields["review_by"] = value if isinstance(value, date) else date.fromisoformat(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: review-by {value!r} is not a date (YYYY-MM-DD)") from None
    clause = item.get("clause")
    if clause is not None:
        try:
            clause = str(Specifier(str(clause)))  # normalized as exclusion clauses are
        except InvalidSpecifier:
            raise ConfigError(
                f"{where}: annotation clause {clause!r} is not a version clause",
                tip='Write it as in the requirement, e.g. clause = "<14.1.0".',
            ) from None
    return ConfigAnnotation(
        package=item["package"],
        source=item.get("source"),
        clause=clause,
        fields=fields,
    )


def parse_config(table: dict[str, Any], path: Path) -> Config:
    """Validate a ``[tool.govern]`` table."""
    where = str(path)
    unknown = set(table) - _KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown [tool.govern] key(s) {', '.join(sorted(unknown))}",
            tip=f"Known keys: {', '.join(sorted(_KEYS))}.",
        )
    for key, choices in _CHOICES.items():
        if key in table and table[key] not in choices:
            raise ConfigError(f"{where}: {key} must be one of {', '.join(choices)}")
    annotations = table.get("annotations", [])
    if not isinstance(annotations, list):
        raise ConfigError(
            f"{where}: annotations must be an array of tables ([[tool.govern.annotations]])"
        )
    return Config(
        path=path,
        policy=table.get("policy"),
        include=_strings(table.get("include", []), "include", where),
        exclude=_strings(table.get("exclude", []), "exclude", where),
        repository=table.get("repository"),
        forge=table.get("forge"),
        bug_url=table.get("bug-url"),
        comment_style=table.get("comment-style", "above"),
        comment_scope=table.get("comment-scope", "group"),
        inline_comments=table.get("inline-comments", "auto"),
        allow_includes_outside_root=bool(table.get("allow-includes-outside-root", False)),
        fail_on=table.get("fail-on"),
        annotations=tuple(_annotation(a, where) for a in annotations),
    )


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """The configuration for ``root``: ``explicit``, ``.govern.toml`` or ``[tool.govern]``."""
    candidates = [explicit] if explicit else [root / ".govern.toml", root / "pyproject.toml"]
    for path in candidates:
        if path is None or not path.is_file():
            if explicit is not None:
                raise ConfigError(f"config file {explicit} does not exist")
            continue
        try:
            with path.open("rb") as handle:
                data = tomllib.load(handle)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            if path.name == "pyproject.toml" and explicit is None:
                # A broken pyproject.toml is a finding of the audit, not a config error.
                return Config()
            raise ConfigError(f"{path}: {exc}", tip="Fix the TOML syntax.") from None
        if path.name == "pyproject.toml":
            table = data.get("tool", {}).get("govern")
            if table is None:
                continue
        else:
            table = data.get("tool", {}).get("govern", data)
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.govern] must be a table")
        return parse_config(table, path)
    return Config()
