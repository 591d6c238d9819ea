"""Configuration: ``[tool.govern]`` in ``pyproject.toml``, or a ``.govern.toml``.

Read once per run from the audited root; invalid configuration is a
:class:`~govern.errors.ConfigError` (exit 2), never silently ignored.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from string import Formatter
from typing import Any, TypeVar

from packaging.utils import canonicalize_name

from govern.errors import ConfigError
from govern.exclusions.settings import (
    STRATEGY_CHOICES,
    CommentSettings,
    ConfigAnnotation,
    LinkContext,
)
from govern.exclusions.states import FORGE_VIAS, ProposeMode, Via
from govern.sources.model import ConfiguredLock
from govern.sources.reading import Unreadable, read_bounded
from govern.tomltables import (
    InvalidToml,
    boolean,
    choice,
    days,
    flag,
    kind,
    known_keys,
    names,
    parse_toml,
    show,
    string,
    strings,
    tables,
)

_T = TypeVar("_T")

#: A key path inside the govern table: keys, and indices of ``[[annotations]]``.
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One problem of a configuration: the key it is about (a path inside the govern
    table), the message as loading raises it (``FILE: ...``) and its tip."""

    key: KeyPath
    message: str
    tip: str | None = None


@dataclass(slots=True)
class _Problems:
    """The problems met while one table is validated.

    Each check runs through :meth:`value`: a :class:`ConfigError` it raises is recorded
    against its key and the setting takes its default, so one pass finds every problem
    (``govern config check``) and loading raises the first (:func:`parse_config`).
    """

    where: str
    found: list[ConfigProblem] = field(default_factory=list)

    def add(self, key: KeyPath, error: ConfigError) -> None:
        self.found.append(ConfigProblem(key, error.message, error.tip))

    def value(
        self, key: KeyPath, default: Any, check: Callable[..., _T], *args: Any, **kwargs: Any
    ) -> _T:
        """``check(*args, **kwargs)``, or ``default`` once its error is recorded against
        ``key`` (the default is of the type ``check`` returns)."""
        try:
            return check(*args, **kwargs)
        except ConfigError as exc:
            self.add(key, exc)
            return default  # type: ignore[no-any-return]

    def keys(
        self,
        table: Mapping[str, Any],
        known: Collection[str],
        key: KeyPath,
        *,
        what: str = "key(s)",
        after: str = "",
        tip: str | None = None,
    ) -> None:
        """One problem per key of ``table`` not in ``known``, at that key."""
        for name in table:
            if name not in known:
                self.value(
                    (*key, name),
                    None,
                    lambda one: known_keys(one, known, self.where, what=what, after=after, tip=tip),
                    {name: None},
                )


#: The keys of ``[tool.govern]``.
TOOL_KEYS = {
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
    "locks",
    "database",
    "index-url",
    "extra-index-urls",
    "indexes",
    "trusted-redirects",
    "profiles",
    "minimum-release-age",
    "allow-prereleases",
    "allow-sdist",
    "stale-cap-days",
    "relax-strategy",
    "ci",
    "verify-with",
    "verify-attempts",
    "web",
    "propose",
    "notify",
}
_WEB_KEYS = {
    "token-env": "GOVERN_WEB_TOKEN",
    "github-webhook-secret-env": "GOVERN_GITHUB_WEBHOOK_SECRET",
    "buildkite-webhook-token-env": "GOVERN_BUILDKITE_WEBHOOK_TOKEN",
    "gitlab-webhook-token-env": "GOVERN_GITLAB_WEBHOOK_TOKEN",
}
CI_KINDS = ("command", "github-actions", "buildkite", "gitlab")
_PROFILE_KEYS = {
    "ci",
    "python",
    "platforms",
    "implementation",
    "markers",
    "allow-prereleases",
    "allow-sdist",
    "minimum-release-age",
}
#: The keys of an ``[[tool.govern.annotations]]`` entry.
ANNOTATION_KEYS = {
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
    "strategy",
}
#: The keys of a ``[[tool.govern.locks]]`` entry.
LOCK_KEYS = {"path", "command", "intent"}
_CHOICES = {
    "comment-style": ("above", "below"),
    "comment-scope": ("group", "line"),
    "inline-comments": ("auto", "reason", "ignore"),
    "fail-on": ("error", "warning", "info", "never"),
    "relax-strategy": STRATEGY_CHOICES,
}


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    """A runtime profile as configured (``[tool.govern.profiles.NAME]``)."""

    name: str
    python: str | None = None  # "3.12"; None: the running interpreter
    platforms: tuple[str, ...] = ()  # wheel platform tags; (): this machine's
    implementation: str = "cp"
    markers: tuple[tuple[str, str], ...] = ()
    allow_prereleases: bool | None = None  # None: the top-level setting
    allow_sdist: bool | None = None
    minimum_release_age: int | None = None  # days
    ci: str | None = None  # the [tool.govern.ci.NAME] that verifies on this profile


@dataclass(frozen=True, slots=True)
class CIConfig:
    """A CI provider as configured (``[tool.govern.ci.NAME]``); its own keys are checked
    by the provider when it is built (``govern.ci.providers``)."""

    name: str
    provider: str  # one of CI_KINDS
    options: tuple[tuple[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The options as a table (``provider`` included)."""
        return dict(self.options)


PROPOSE_MODES = tuple(ProposeMode)
PROPOSE_VIA = (Via.GIT, *FORGE_VIAS)  # what `via =` accepts: remind and ? are never written
_PROPOSE_KEYS = {
    "via",
    "remote",
    "base",
    "propose",
    "packages",
    "exclusions",
    "branch-prefix",
    "author",
    "labels",
    "draft",
    "token-env",
    "forge",
    "api-url",
    "app-id",
    "installation-id",
    "private-key-env",
}


@dataclass(frozen=True, slots=True)
class ProposeConfig:
    """``[tool.govern.propose]`` (``[propose]`` in .govern.toml): how relaxations are proposed."""

    via: Via = Via.GIT  # git | github | gitlab
    remote: str = "origin"  # the git remote branches are pushed to
    base: str | None = None  # the branch proposals target; None: the remote's default
    mode: ProposeMode = ProposeMode.PULL_REQUEST  # ``propose = ...``
    packages: tuple[tuple[str, ProposeMode], ...] = ()  # (canonical package, mode) overrides
    exclusions: tuple[tuple[str, ProposeMode], ...] = ()  # (exclusion id, mode): the narrowest
    branch_prefix: str = "govern/relax"
    author: str | None = None  # "Name <email>" of the commit; None: govern's own
    labels: tuple[str, ...] = ("dependencies",)
    draft: bool = False
    token_env: str | None = None  # the variable holding the forge's token (never the token)
    forge: str | None = None  # the repository's forge URL when the remote does not say
    api_url: str | None = None  # GitHub Enterprise / self-hosted GitLab API
    # A GitHub App instead of a token: its id, the installation's id, and the variable
    # holding its PEM private key (never the key).
    app_id: str | None = None
    installation_id: int | None = None
    private_key_env: str | None = None

    def mode_for(self, package: str, exclusion: str | None = None) -> ProposeMode:
        """The mode for one exclusion: its own override, else its package's, else the
        repository's."""
        if exclusion is not None and (own := dict(self.exclusions).get(exclusion)):
            return own
        return dict(self.packages).get(canonicalize_name(package), self.mode)

    def author_identity(self) -> tuple[str, str] | None:
        """``author = "Name <email>"`` as (name, email); None: govern's own."""
        if self.author is None:
            return None
        name, _, rest = self.author.partition("<")
        return name.strip(), rest.rstrip(">").strip()


def _propose(value: Any, problems: _Problems) -> ProposeConfig:
    where, at = problems.where, "propose"
    tip = 'Write [tool.govern.propose] then via = "git" and remote = "origin".'
    if not isinstance(value, dict):
        problems.add(
            (at,), ConfigError(f"{where}: propose must be a table, not {show(value)}", tip=tip)
        )
        return ProposeConfig()
    problems.keys(value, _PROPOSE_KEYS, (at,), what="[tool.govern.propose] key(s)", tip=tip)

    def get(key: str, default: Any, check: Callable[..., _T], *args: Any) -> _T:
        return problems.value((at, key), default, check, *args)

    packages = get("packages", {}, _packages, value, where)
    exclusions = get("exclusions", {}, _exclusions, value, where)
    author = get("author", None, _author, value, where)
    token_env = get("token-env", None, _variable, value, "token-env", where, "GITHUB_TOKEN")
    private_key_env = get(
        "private-key-env", None, _variable, value, "private-key-env", where, "GOVERN_APP_KEY"
    )
    app_id, installation_id = get("app-id", (None, None), _app, value, where, private_key_env)
    return ProposeConfig(
        via=Via(get("via", Via.GIT, choice, value, "via", where, PROPOSE_VIA, Via.GIT)),
        remote=get("remote", None, string, value, "remote", where, "propose.") or "origin",
        base=get("base", None, string, value, "base", where, "propose."),
        mode=ProposeMode(
            get(
                "propose",
                ProposeMode.PULL_REQUEST,
                choice,
                value,
                "propose",
                where,
                PROPOSE_MODES,
                ProposeMode.PULL_REQUEST,
            )
        ),
        packages=tuple(sorted((canonicalize_name(k), ProposeMode(m)) for k, m in packages.items())),
        exclusions=tuple(sorted((k, ProposeMode(m)) for k, m in exclusions.items())),
        branch_prefix=get("branch-prefix", None, string, value, "branch-prefix", where, "propose.")
        or "govern/relax",
        author=author,
        labels=get(
            "labels",
            ("dependencies",),
            strings,
            value.get("labels", ["dependencies"]),
            "labels",
            where,
        ),
        draft=get("draft", False, boolean, value, "draft", where),
        token_env=token_env,
        forge=get("forge", None, string, value, "forge", where, "propose."),
        api_url=get("api-url", None, string, value, "api-url", where, "propose."),
        app_id=app_id,
        installation_id=installation_id,
        private_key_env=private_key_env,
    )


def _packages(value: dict[str, Any], where: str) -> dict[str, Any]:
    packages = value.get("packages", {})
    if not isinstance(packages, dict) or not all(
        isinstance(m, str) and m in PROPOSE_MODES for m in packages.values()
    ):
        raise ConfigError(
            f"{where}: propose.packages must map package names to one of "
            f"{', '.join(PROPOSE_MODES)}",
            tip='Write packages = { "cupy-cuda13x" = "remind" }.',
        )
    return packages


def _exclusions(value: dict[str, Any], where: str) -> dict[str, Any]:
    exclusions = value.get("exclusions", {})
    if not isinstance(exclusions, dict) or not all(
        isinstance(k, str) and re.fullmatch(r"[0-9a-f]{16}", k) and m in PROPOSE_MODES
        for k, m in exclusions.items()
    ):
        raise ConfigError(
            f"{where}: propose.exclusions must map exclusion ids (16 hex digits, as "
            f"govern status shows them) to one of {', '.join(PROPOSE_MODES)}",
            tip='Write exclusions = { "3f2a9c0d1e4b5a6f" = "none" }.',
        )
    return exclusions


def _author(value: dict[str, Any], where: str) -> str | None:
    author = string(value, "author", where, "propose.")
    if author is not None and not re.fullmatch(r"[^<>]+ <[^<>\s]+@[^<>\s]+>", author.strip()):
        raise ConfigError(
            f"{where}: propose.author must read Name <email>, not {show(author)}",
            tip='Write author = "Release Bot <bot@example.org>".',
        )
    return author.strip() if author is not None else None


def _app(
    value: dict[str, Any], where: str, private_key_env: str | None
) -> tuple[str | None, int | None]:
    """A GitHub App's (app-id, installation-id), both None when no App is named."""
    app_id = value.get("app-id")
    installation_id = value.get("installation-id")
    app = (app_id, installation_id, value.get("private-key-env"))
    if any(part is not None for part in app) and (
        not isinstance(app_id, str | int)
        or isinstance(app_id, bool)
        or not str(app_id).isdigit()
        or not isinstance(installation_id, int)
        or isinstance(installation_id, bool)
        or installation_id < 1
        or private_key_env is None
    ):
        raise ConfigError(
            f"{where}: a GitHub App needs app-id, installation-id (numbers) and "
            "private-key-env together",
            tip="Write app-id = 123456, installation-id = 7890123 and private-key-env = "
            '"GOVERN_APP_KEY" (the variable holding the PEM key).',
        )
    return (str(app_id) if app_id is not None else None), installation_id


def _variable(value: dict[str, Any], key: str, where: str, example: str) -> str | None:
    """A key that names an environment variable (never the secret it holds)."""
    name = string(value, key, where, "propose.")
    if name is not None and not name.replace("_", "").isalnum():
        raise ConfigError(
            f"{where}: propose.{key} must name an environment variable, not {show(name)}",
            tip=f'Write {key} = "{example}" (the name of a variable, not a secret).',
        )
    return name


NOTIFY_CHANNELS = ("issue", "webhook", "email")
NOTIFY_DIGESTS = ("none", "daily", "weekly")
SMTP_TLS = ("starttls", "implicit")  # RFC 3207 on 587; RFC 8314's implicit TLS on 465
_NOTIFY_KEYS = {
    "channels",
    "webhook-url-env",
    "smtp-host",
    "smtp-port",
    "smtp-from",
    "smtp-to",
    "smtp-user-env",
    "smtp-password-env",
    "smtp-tls",
    "starttls",
    "cafile",
    "pending-issue",
    "digest",
}
# Keys that would hold a secret itself, and the key that names its variable instead.
_NOTIFY_SECRETS = {
    "webhook-url": "webhook-url-env",
    "smtp-password": "smtp-password-env",
    "password": "smtp-password-env",
}


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    """``[tool.govern.notify]`` (``[notify]`` in .govern.toml): where reminders go, and the
    pending-relaxations issue and digest. Secrets are named by their variables, never held."""

    channels: tuple[str, ...] = ("issue",)  # of NOTIFY_CHANNELS, in the order they are sent
    webhook_url_env: str | None = None  # the variable holding the webhook's URL (a secret)
    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_from: str | None = None
    smtp_to: tuple[str, ...] = ()
    smtp_user_env: str | None = None
    smtp_password_env: str | None = None
    smtp_tls: str = "starttls"  # of SMTP_TLS; "implicit" by default on port 465
    starttls: bool = True  # false only on purpose: the password would cross in clear
    cafile: str | None = None  # a PEM CA bundle for the SMTP server (relative: to the config)
    pending_issue: bool = False
    digest: str = "none"  # none | daily | weekly


def _notify_variable(value: dict[str, Any], key: str, where: str) -> str | None:
    """A notify key that names an environment variable (never the secret it holds)."""
    name = string(value, key, where, "notify.")
    if name is not None and not (name.replace("_", "").isalnum() and not name[0].isdigit()):
        raise ConfigError(
            f"{where}: notify.{key} must name an environment variable, not {show(name)}",
            tip=f'Write {key} = "GOVERN_..." (the name of a variable, not a secret).',
        )
    return name


def _notify(value: Any, problems: _Problems) -> NotifyConfig:
    where, at = problems.where, "notify"
    tip = 'Write [tool.govern.notify] then channels = ["issue"].'
    if not isinstance(value, dict):
        problems.add(
            (at,), ConfigError(f"{where}: notify must be a table, not {show(value)}", tip=tip)
        )
        return NotifyConfig()
    for key, variable in _NOTIFY_SECRETS.items():
        if key in value:
            problems.add(
                (at, key),
                ConfigError(
                    f"{where}: [tool.govern.notify] holds {key}: a secret must never be "
                    "committed in a configuration file",
                    tip=f"Remove it, revoke it, and name the variable that holds it: "
                    f'{variable} = "..."',
                ),
            )
    rest = {k: v for k, v in value.items() if k not in _NOTIFY_SECRETS}  # refused above
    problems.keys(rest, _NOTIFY_KEYS, (at,), what="[tool.govern.notify] key(s)")

    def get(key: str, default: Any, check: Callable[..., _T], *args: Any) -> _T:
        return problems.value((at, key), default, check, *args)

    channels = get("channels", ("issue",), _channels, value, where)
    port = get("smtp-port", 587, _port, value, where)
    settings = NotifyConfig(
        channels=channels,
        webhook_url_env=get(
            "webhook-url-env", None, _notify_variable, value, "webhook-url-env", where
        ),
        smtp_host=get("smtp-host", None, string, value, "smtp-host", where, "notify."),
        smtp_port=port,
        smtp_from=get("smtp-from", None, string, value, "smtp-from", where, "notify."),
        smtp_to=get("smtp-to", (), strings, value.get("smtp-to", []), "notify.smtp-to", where),
        smtp_user_env=get("smtp-user-env", None, _notify_variable, value, "smtp-user-env", where),
        smtp_password_env=get(
            "smtp-password-env", None, _notify_variable, value, "smtp-password-env", where
        ),
        smtp_tls=get(
            "smtp-tls",
            "starttls",
            choice,
            value,
            "smtp-tls",
            where,
            SMTP_TLS,
            "implicit" if port == 465 else "starttls",
        ),
        starttls=get("starttls", None, flag, value, "starttls", where, "notify.") is not False,
        cafile=get("cafile", None, string, value, "cafile", where, "notify."),
        pending_issue=get("pending-issue", False, boolean, value, "pending-issue", where),
        digest=get("digest", "none", choice, value, "digest", where, NOTIFY_DIGESTS, "none"),
    )
    if (
        "webhook" in channels
        and settings.webhook_url_env is None
        and "webhook-url-env" not in value
    ):
        problems.add(
            (at, "channels"),
            ConfigError(
                f'{where}: notify.channels has "webhook" but no webhook-url-env',
                tip='Add webhook-url-env = "GOVERN_WEBHOOK_URL" and put the URL in that variable.',
            ),
        )
    if "email" in channels:
        missing = [key for key in ("smtp-host", "smtp-from", "smtp-to") if not value.get(key)]
        if missing:
            problems.add(
                (at, "channels"),
                ConfigError(
                    f'{where}: notify.channels has "email" but no {", ".join(missing)}',
                    tip='Add smtp-host = "smtp.example.org", smtp-from = "govern@example.org" '
                    'and smtp-to = ["team@example.org"].',
                ),
            )
    if ("smtp-user-env" in value) != ("smtp-password-env" in value):
        problems.add(
            (at, "smtp-user-env" if "smtp-user-env" in value else "smtp-password-env"),
            ConfigError(
                f"{where}: notify.smtp-user-env and smtp-password-env go together",
                tip='Name both variables: smtp-user-env = "SMTP_USER", '
                'smtp-password-env = "SMTP_PASSWORD".',
            ),
        )
    if settings.digest != "none" and not {"webhook", "email"} & set(channels):
        problems.add(
            (at, "digest"),
            ConfigError(
                f"{where}: notify.digest = {show(settings.digest)} needs a webhook or email "
                "channel",
                tip='Add "webhook" or "email" to channels (the pending issue is '
                "pending-issue = true).",
            ),
        )
    return settings


def _channels(value: dict[str, Any], where: str) -> tuple[str, ...]:
    channels = strings(value.get("channels", ["issue"]), "notify.channels", where)
    odd = [c for c in channels if c not in NOTIFY_CHANNELS]
    if odd:
        raise ConfigError(
            f"{where}: notify.channels holds {show(odd[0])}, not one of "
            f"{', '.join(NOTIFY_CHANNELS)}",
            tip='Write channels = ["issue", "webhook", "email"] (any of them).',
        )
    return tuple(dict.fromkeys(channels))


def _port(value: dict[str, Any], where: str) -> int:
    port = value.get("smtp-port", 587)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(
            f"{where}: notify.smtp-port must be a port number, not {show(port)}",
            tip="Write it without quotes: smtp-port = 587 (STARTTLS's submission port).",
        )
    return port


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
    # How relaxations are written for this repository's exclusions (an exclusion's or a
    # package's ``strategy`` wins): None is ``exclude``.
    relax_strategy: str | None = None
    annotations: tuple[ConfigAnnotation, ...] = ()
    # Files that are locks though neither their name nor their header says so (OpenStack's
    # upper-constraints.txt): their pins are no exclusions.
    locks: tuple[ConfiguredLock, ...] = ()
    database: str | None = None  # the store's URL (GOVERN_DATABASE_URL and --db win)
    # The watcher: which index (else pip's configuration), per-package indexes, profiles.
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    indexes: tuple[tuple[str, str], ...] = ()  # (canonical package, index URL)
    trusted_redirects: tuple[str, ...] = ()  # origins an index may redirect to, besides its own
    profiles: tuple[ProfileConfig, ...] = ()
    minimum_release_age: int = 0  # days a release must have been out to be a candidate
    allow_prereleases: bool = False
    allow_sdist: bool = False
    stale_cap_days: int = 90  # stale-cap: releases above a cap for longer than this
    # Verification: CI providers by name, the default one, and tries per candidate.
    ci: tuple[CIConfig, ...] = ()
    verify_with: str | None = None
    verify_attempts: int = 3
    # The dashboard: the names of the variables that hold its secrets (never the secrets).
    web_token_env: str = _WEB_KEYS["token-env"]
    github_webhook_secret_env: str = _WEB_KEYS["github-webhook-secret-env"]
    buildkite_webhook_token_env: str = _WEB_KEYS["buildkite-webhook-token-env"]
    gitlab_webhook_token_env: str = _WEB_KEYS["gitlab-webhook-token-env"]
    propose: ProposeConfig = ProposeConfig()
    notify: NotifyConfig = NotifyConfig()
    # The tables the file wrote ([propose], [notify], ...): what the user asked for, as
    # opposed to the defaults (the daemon proposes once [propose] or [notify] is there).
    sections: frozenset[str] = frozenset()

    @property
    def proposes(self) -> bool:
        """Whether a proposal or reminder channel is configured ([propose] or [notify])."""
        return bool(self.sections & {"propose", "notify"})

    def checked(self) -> Config:
        """Self, once every CI name that is referred to is defined."""
        problems = _Problems(str(self.path))
        self._check_ci_names(problems)
        if problems.found:
            raise ConfigError(problems.found[0].message, tip=problems.found[0].tip)
        return self

    def _check_ci_names(self, problems: _Problems, tables: Collection[str] = ()) -> None:
        """Record each CI name referred to (verify-with, a profile's ci) that is not defined
        (``tables``: names whose table has a problem of its own, not reported twice)."""
        defined = {c.name for c in self.ci}
        written = defined | set(tables)
        refs: list[tuple[KeyPath, str, str | None]] = [
            (("verify-with",), "verify-with", self.verify_with)
        ]
        refs += [(("profiles", p.name, "ci"), f"profiles.{p.name}.ci", p.ci) for p in self.profiles]
        for path, key, ref in refs:
            if ref is not None and ref not in written:
                shown = ", ".join(sorted(defined)) or "none"
                problems.add(
                    path,
                    ConfigError(
                        f"{self.path}: {key} names CI {show(ref)}, which is not defined "
                        f"(defined: {shown})",
                        tip=f'Add [tool.govern.ci.{ref}] with provider = "...".',
                    ),
                )

    def secret_variables(self) -> frozenset[str]:
        """The environment variables this configuration names as holding secrets: the
        forge's token and App key, the webhook's URL, the SMTP login, the dashboard's
        tokens and every CI table's ``*-env`` (whatever the variables are called)."""
        propose, notify = self.propose, self.notify
        names = {
            propose.token_env,
            propose.private_key_env,  # an App's key (an App must name its variable)
            notify.webhook_url_env,
            notify.smtp_user_env,
            notify.smtp_password_env,
            self.web_token_env,
            self.github_webhook_secret_env,
            self.buildkite_webhook_token_env,
            self.gitlab_webhook_token_env,
        }
        for ci in self.ci:  # token-env, read-token-env: each names a variable, never a value
            names.update(v for k, v in ci.options if k.endswith("-env") and isinstance(v, str))
        return frozenset(name for name in names if name)

    @property
    def comments(self) -> CommentSettings:
        """How comments are read into annotations."""
        return CommentSettings(
            style=self.comment_style,
            scope=self.comment_scope,
            inline=self.inline_comments,
            links=LinkContext(forge=self.forge, bug_url=self.bug_url),
        )


def _forge(table: dict[str, Any], where: str) -> str | None:
    value = string(table, "forge", where)
    if value is not None and not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"{where}: forge {show(value)} is not an http:// or https:// URL",
            tip='Write the project URL, e.g. forge = "https://github.com/owner/repo".',
        )
    return value


def _bug_url(table: dict[str, Any], where: str) -> str | None:
    value = string(table, "bug-url", where)
    if value is None:
        return None
    tip = 'Write it with an {id} placeholder, e.g. bug-url = "https://bugs.example.org/{id}".'
    if "{id}" not in value:
        raise ConfigError(f"{where}: bug-url {show(value)} has no {{id}} placeholder", tip=tip)
    try:
        # Only plain {id} fields: no {other}, {0}, {id.attr}, {id[0]}, {id!r} or {id:>999999}.
        fields = [f[1:] for f in Formatter().parse(value) if f[1] is not None]
        if any(f != ("id", "", None) for f in fields):
            raise ValueError(value)
        substituted = value.format(id="1") != value.format(id="2")
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        raise ConfigError(
            f"{where}: bug-url {show(value)} is not a valid template"
            " (only {id} may be in braces; write a literal brace as {{ or }})",
            tip=tip,
        ) from None
    if not substituted:
        raise ConfigError(f"{where}: bug-url {show(value)} has no {{id}} placeholder", tip=tip)
    return value


def _review_by(value: Any, where: str) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ConfigError(
        f"{where}: annotation review-by {show(value)} is not a date (YYYY-MM-DD)",
        tip="Write a date without a time, e.g. review-by = 2027-01-31.",
    )


def _annotation(item: Any, where: str) -> ConfigAnnotation:
    if not isinstance(item, dict) or not isinstance(item.get("package"), str):
        raise ConfigError(
            f'{where}: each [[annotations]] entry needs package = "name"',
            tip="See 'Annotations for generated files' in docs/configuration.md.",
        )
    known_keys(item, ANNOTATION_KEYS, where, what="annotation key(s)")
    fields: dict[str, Any] = {}
    for key in ("reason", "owner", "verify"):
        value = string(item, key, where, prefix="annotation ")
        if value is not None:
            fields[key] = value
    strategy = string(item, "strategy", where, prefix="annotation ")
    if strategy is not None:
        if strategy not in STRATEGY_CHOICES:
            raise ConfigError(
                f"{where}: annotation strategy must be one of {', '.join(STRATEGY_CHOICES)}, "
                f"not {show(strategy)}"
            )
        fields["strategy"] = strategy
    for key, target in (
        ("links", "links"),
        ("issue", "links"),
        ("bad", "bad"),
        ("profiles", "profiles"),
        ("ignore", "ignore"),
    ):
        if key in item:
            fields.setdefault(target, ())
            fields[target] = (*fields[target], *strings(item[key], key, where))
    if "review-by" in item:
        fields["review_by"] = _review_by(item["review-by"], where)
    source = string(item, "source", where, prefix="annotation ")
    clause = string(item, "clause", where, prefix="annotation ")
    if clause is not None:
        try:
            from packaging.specifiers import Specifier  # only for such an annotation

            clause = str(Specifier(clause))  # normalized as exclusion clauses are
        except ValueError:  # InvalidSpecifier
            raise ConfigError(
                f"{where}: annotation clause {show(clause)} is not a version clause",
                tip='Write it as in the requirement, e.g. clause = "<14.1.0".',
            ) from None
    return ConfigAnnotation(
        package=item["package"],
        source=source,
        clause=clause,
        fields=fields,
    )


def _lock(item: Any, where: str) -> ConfiguredLock:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ConfigError(
            f'{where}: each [[locks]] entry needs path = "a file or glob"',
            tip="See 'Locks' in docs/configuration.md.",
        )
    known_keys(item, LOCK_KEYS, where, what="lock key(s)")
    return ConfiguredLock(
        path=item["path"],
        command=string(item, "command", where, prefix="lock "),
        intent=strings(item.get("intent", []), "intent", where),
    )


def _locks(value: Any, problems: _Problems) -> tuple[ConfiguredLock, ...]:
    """Each ``[[locks]]`` entry; a wrong one is a problem at its own index."""
    if not isinstance(value, list):
        problems.add(
            ("locks",),
            ConfigError(
                f"{problems.where}: locks must be an array of tables ([[tool.govern.locks]])",
                tip="See 'Locks' in docs/configuration.md.",
            ),
        )
        return ()
    out = []
    for index, item in enumerate(value):
        found = problems.value(("locks", index), None, _lock, item, problems.where)
        if found is not None:
            out.append(found)
    return tuple(out)


def _annotations(value: Any, problems: _Problems) -> tuple[ConfigAnnotation, ...]:
    """Each ``[[annotations]]`` entry; a wrong one is a problem at its own index."""
    if not isinstance(value, list):
        problems.add(
            ("annotations",),
            ConfigError(
                f"{problems.where}: annotations must be an array of tables "
                "([[tool.govern.annotations]])",
                tip="See 'Annotations for generated files' in docs/configuration.md.",
            ),
        )
        return ()
    out = []
    for index, item in enumerate(value):
        found = problems.value(("annotations", index), None, _annotation, item, problems.where)
        if found is not None:
            out.append(found)
    return tuple(out)


def validate_config(table: dict[str, Any], path: Path) -> tuple[Config, list[ConfigProblem]]:
    """A ``[tool.govern]`` table's settings, and every problem found in it (in the order
    the keys are checked; a setting with a problem keeps its default)."""
    where = str(path)
    problems = _Problems(where)
    problems.keys(table, TOOL_KEYS, (), what="[tool.govern] key(s)")

    def get(key: str, default: Any, check: Callable[..., _T], *args: Any) -> _T:
        return problems.value((key,), default, check, *args)

    annotations = _annotations(table.get("annotations", []), problems)
    config = Config(
        path=path,
        policy=get("policy", None, string, table, "policy", where),
        include=get("include", (), strings, table.get("include", []), "include", where),
        exclude=get("exclude", (), strings, table.get("exclude", []), "exclude", where),
        repository=get("repository", None, string, table, "repository", where),
        forge=get("forge", None, _forge, table, where),
        bug_url=get("bug-url", None, _bug_url, table, where),
        comment_style=get(
            "comment-style",
            "above",
            choice,
            table,
            "comment-style",
            where,
            _CHOICES["comment-style"],
            "above",
        ),
        comment_scope=get(
            "comment-scope",
            "group",
            choice,
            table,
            "comment-scope",
            where,
            _CHOICES["comment-scope"],
            "group",
        ),
        inline_comments=get(
            "inline-comments",
            "auto",
            choice,
            table,
            "inline-comments",
            where,
            _CHOICES["inline-comments"],
            "auto",
        ),
        allow_includes_outside_root=get(
            "allow-includes-outside-root",
            False,
            boolean,
            table,
            "allow-includes-outside-root",
            where,
        ),
        fail_on=get("fail-on", None, choice, table, "fail-on", where, _CHOICES["fail-on"]),
        annotations=annotations,
        locks=_locks(table.get("locks", []), problems),
        database=get("database", None, string, table, "database", where),
        index_url=get("index-url", None, _url, table, "index-url", where),
        extra_index_urls=get("extra-index-urls", (), _urls, table, "extra-index-urls", where),
        indexes=get("indexes", (), _indexes, table.get("indexes", {}), where),
        trusted_redirects=get("trusted-redirects", (), _urls, table, "trusted-redirects", where),
        profiles=_profiles(table.get("profiles", {}), problems),
        minimum_release_age=get("minimum-release-age", 0, days, table, "minimum-release-age", where)
        or 0,
        allow_prereleases=get(
            "allow-prereleases", False, boolean, table, "allow-prereleases", where
        ),
        allow_sdist=get("allow-sdist", False, boolean, table, "allow-sdist", where),
        stale_cap_days=get("stale-cap-days", 90, days, table, "stale-cap-days", where) or 90,
        relax_strategy=get(
            "relax-strategy", None, choice, table, "relax-strategy", where, STRATEGY_CHOICES
        ),
        ci=_ci(table.get("ci", {}), problems),
        verify_with=get("verify-with", None, string, table, "verify-with", where),
        verify_attempts=get("verify-attempts", 3, _attempts, table, where),
        propose=_propose(table.get("propose", {}), problems),
        notify=_notify(table.get("notify", {}), problems),
        **_web(table.get("web", {}), problems),
        sections=frozenset(k for k, v in table.items() if isinstance(v, dict)),
    )
    ci = table.get("ci")
    config._check_ci_names(problems, ci if isinstance(ci, dict) else ())
    return config, problems.found


def parse_config(table: dict[str, Any], path: Path) -> Config:
    """Validate a ``[tool.govern]`` table: its settings, or a :class:`ConfigError` for its
    first problem (``govern config check`` lists them all)."""
    config, problems = validate_config(table, path)
    if problems:
        first = problems[0]
        tip = first.tip
        if len(problems) > 1:
            more = len(problems) - 1
            plural = "s" if more > 1 else ""
            tip = f"{tip or ''} ({more} more problem{plural}: govern config check)".lstrip()
        raise ConfigError(first.message, tip=tip)
    return config


def _web(value: Any, problems: _Problems) -> dict[str, str]:
    where = problems.where
    out = {key.replace("-", "_"): default for key, default in _WEB_KEYS.items()}
    if not isinstance(value, dict):
        problems.add(
            ("web",),
            ConfigError(
                f"{where}: web must be a table ([tool.govern.web]), not {show(value)}",
                tip='Write [tool.govern.web] then token-env = "GOVERN_WEB_TOKEN".',
            ),
        )
        value = {}
    problems.keys(
        value,
        _WEB_KEYS,
        ("web",),
        what="[tool.govern.web] key(s)",
        tip=f"Known keys: {', '.join(sorted(_WEB_KEYS))} (names of environment variables; "
        "a secret itself never goes in a file).",
    )
    for key, default in _WEB_KEYS.items():
        name = value.get(key, default)
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            problems.add(
                ("web", key),
                ConfigError(
                    f"{where}: web.{key} must name an environment variable, not {show(name)}",
                    tip=f'Write {key} = "{default}" (the name of a variable, not a secret).',
                ),
            )
            continue
        out[key.replace("-", "_")] = name
    return {
        "web_token_env": out["token_env"],
        "github_webhook_secret_env": out["github_webhook_secret_env"],
        "buildkite_webhook_token_env": out["buildkite_webhook_token_env"],
        "gitlab_webhook_token_env": out["gitlab_webhook_token_env"],
    }


def _ci(value: Any, problems: _Problems) -> tuple[CIConfig, ...]:
    where = problems.where
    tip = 'Write [tool.govern.ci.local] then provider = "command".'
    out: list[CIConfig] = []
    found = problems.value(("ci",), {}, tables, value, "ci", where, each="provider", tip=tip)
    for name, item in sorted(found.items()):
        kind = item.get("provider")
        if kind not in CI_KINDS:
            problems.add(
                ("ci", name, "provider"),
                ConfigError(
                    f"{where}: [tool.govern.ci.{name}] needs provider = one of "
                    f"{', '.join(CI_KINDS)}, not {show(kind)}",
                    tip='Write provider = "command" (or github-actions, buildkite, gitlab).',
                ),
            )
            continue
        if "token" in item:
            problems.add(
                ("ci", name, "token"),
                ConfigError(
                    f"{where}: [tool.govern.ci.{name}] holds a token: a token must never be "
                    "committed in a configuration file",
                    tip="Remove it, revoke it, and name the variable that holds it: "
                    'token-env = "..."',
                ),
            )
            continue
        out.append(CIConfig(name=name, provider=kind, options=tuple(sorted(item.items()))))
    return tuple(out)


def _attempts(table: dict[str, Any], where: str) -> int:
    value = table.get("verify-attempts", 3)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise ConfigError(
            f"{where}: verify-attempts must be a number from 1 to 20, not {show(value)}",
            tip="Write it without quotes: verify-attempts = 3.",
        )
    return value


def _check_url(value: str, key: str, where: str) -> str:
    if not value.startswith(("http://", "https://", "file://")) and "${" not in value:
        raise ConfigError(
            f"{where}: {key} {show(value)} is not an http(s):// URL",
            tip=f'Write the Simple API root, e.g. {key} = "https://index.example.org/simple".',
        )
    return value


def _url(table: dict[str, Any], key: str, where: str) -> str | None:
    value = string(table, key, where)
    return None if value is None else _check_url(value, key, where)


def _urls(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    return tuple(_check_url(u, key, where) for u in strings(table.get(key, []), key, where))


def _indexes(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(
            f"{where}: indexes must be a table of package = index URL, not {show(value)}",
            tip='Write [tool.govern.indexes] then internal-lib = "https://pkgs.example.org/simple".',
        )
    return tuple(
        sorted(
            (canonicalize_name(k), _check_url(v, f"indexes.{names({k})}", where))
            for k, v in value.items()
        )
    )


def _profiles(value: Any, problems: _Problems) -> tuple[ProfileConfig, ...]:
    where = problems.where
    tip = 'Write [tool.govern.profiles.cuda13] then python = "3.12".'
    out: list[ProfileConfig] = []
    found = problems.value(
        ("profiles",), {}, tables, value, "profiles", where, each="profile", tip=tip
    )
    for name, item in sorted(found.items()):
        prefix = f"profiles.{name}."
        at = ("profiles", name)
        problems.keys(item, _PROFILE_KEYS, at, after=f" in profile {name}")

        def get(key: str, default: Any, check: Callable[..., _T], *args: Any) -> _T:
            return problems.value((*at, key), default, check, *args)  # noqa: B023

        out.append(
            ProfileConfig(
                name=name,
                python=get("python", None, _python, item, where, prefix),
                platforms=get(
                    "platforms", (), strings, item.get("platforms", []), prefix + "platforms", where
                ),
                implementation=get(
                    "implementation", None, string, item, "implementation", where, prefix
                )
                or "cp",
                markers=get("markers", (), _markers, item, where, prefix),
                allow_prereleases=get(
                    "allow-prereleases", None, flag, item, "allow-prereleases", where, prefix
                ),
                allow_sdist=get("allow-sdist", None, flag, item, "allow-sdist", where, prefix),
                minimum_release_age=get(
                    "minimum-release-age", None, days, item, "minimum-release-age", where
                ),
                ci=get("ci", None, string, item, "ci", where, prefix),
            )
        )
    return tuple(out)


def _python(item: dict[str, Any], where: str, prefix: str) -> str | None:
    python = string(item, "python", where, prefix)
    if python is not None:
        try:
            from packaging.version import Version  # only for a profile's python

            Version(python)
        except ValueError:  # InvalidVersion, or a number past the int-string limit
            raise ConfigError(
                f"{where}: {prefix}python {show(python)} is not a version",
                tip='Write it as python = "3.12".',
            ) from None
    return python


def _markers(item: dict[str, Any], where: str, prefix: str) -> tuple[tuple[str, str], ...]:
    markers = item.get("markers", {})
    if not isinstance(markers, dict) or not all(isinstance(v, str) for v in markers.values()):
        raise ConfigError(
            f"{where}: {prefix}markers must be a table of marker = value",
            tip='Write markers = { sys_platform = "linux" }.',
        )
    return tuple(sorted(markers.items()))


def _exists(path: Path) -> bool:
    """Whether there is something at ``path`` that is not a directory (a FIFO is refused
    when read, not skipped as if it were not there)."""
    try:
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):  # a path too long for the OS, a NUL byte
        return False


def _shown_path(path: Path) -> str:
    text = str(path)
    return repr(text[:200]) if len(text) > 200 or not text.isprintable() else text


_SYNTAX_TIP = "Fix the TOML syntax."


def _read_toml(path: Path, root: Path | None, *, quiet: bool) -> tuple[dict[str, Any], str] | None:
    """The TOML table of a configuration file and its text (read bounded:
    :mod:`govern.sources.reading`).

    ``root``: the file was found there, not named, so a link out of it is refused.
    ``quiet``: a file that cannot be used is None instead of an error.
    """
    try:
        outside = root is not None and not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop: read_bounded says it cannot be read
        outside = False
    if outside:
        raw: bytes | Unreadable = Unreadable(
            f"{path} is a link to a file outside the audited directory; not read"
        )
    else:
        raw = read_bounded(path, shown=str(path))
    if isinstance(raw, Unreadable):
        if quiet:
            return None
        raise ConfigError(raw.message, tip="Use a regular .govern.toml inside the repository.")
    try:
        return parse_toml(raw), raw.decode("utf-8")
    except InvalidToml as exc:
        if quiet:
            return None
        raise ConfigError(f"{path}: {exc}", tip=_SYNTAX_TIP) from None


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """The file a configuration is read from: its govern table, where that table sits in
    the document (``("tool", "govern")`` or ``()``), and the file's text."""

    path: Path
    table: dict[str, Any]
    at: KeyPath
    text: str


def find_config(root: Path, explicit: Path | None = None) -> ConfigFile | None:
    """The configuration file for ``root``: ``explicit``, ``.govern.toml`` or
    ``[tool.govern]`` in ``pyproject.toml``; None when there is none (or the pyproject is
    one the audit reports on). A file that cannot be read as one is a ConfigError."""
    candidates = [explicit] if explicit else [root / ".govern.toml", root / "pyproject.toml"]
    for path in candidates:
        if path is None or not _exists(path):
            if explicit is not None:
                raise ConfigError(
                    f"config file {_shown_path(explicit)} does not exist",
                    tip="Name an existing .govern.toml, or leave out --config.",
                )
            continue
        # A broken or refused pyproject.toml is a finding of the audit, not a config error.
        beside = path.name == "pyproject.toml" and explicit is None
        read = _read_toml(path, root if explicit is None else None, quiet=beside)
        if read is None:
            return None
        data, text = read
        tool = data.get("tool")
        at: KeyPath = ("tool", "govern")
        if path.name == "pyproject.toml":
            if not isinstance(tool, dict):
                if tool is None or explicit is None:
                    # No [tool] table, or one the audit reports: no govern settings here.
                    continue
                raise ConfigError(
                    f"{path}: tool must be a table, not {kind(tool)}",
                    tip="Write the settings under a [tool.govern] header.",
                )
            table = tool.get("govern")
            if table is None:
                continue
        elif tool is None:
            table, at = data, ()
        elif not isinstance(tool, dict):
            raise ConfigError(
                f"{path}: tool must be a table, not {kind(tool)}",
                tip="Put the settings at the top level, or under [tool.govern].",
            )
        elif "govern" in tool:
            table = tool["govern"]
        else:
            table, at = data, ()
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: [tool.govern] must be a table, not {kind(table)}",
                tip="Write the settings under a [tool.govern] header.",
            )
        return ConfigFile(path, table, at, text)
    return None


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """The configuration for ``root``: ``explicit``, ``.govern.toml`` or ``[tool.govern]``."""
    found = find_config(root, explicit)
    return Config() if found is None else parse_config(found.table, found.path)


@dataclass(frozen=True, slots=True)
class PlacedProblem:
    """A configuration problem with the file, line and column it is at (None: unknown)."""

    file: str
    line: int | None
    column: int | None
    message: str  # without the file's name
    tip: str | None = None


def check_config(
    root: Path, explicit: Path | None = None
) -> tuple[ConfigFile | None, Config, list[PlacedProblem]]:
    """Every problem of the configuration for ``root`` at once, each placed at its key's
    line and column: what ``govern config check`` prints. The same validation as loading
    (:func:`validate_config`); a file that cannot be read at all is one problem."""
    from govern.sources.tomlpos import Scanner

    try:
        found = find_config(root, explicit)
    except ConfigError as exc:
        return None, Config(), [_unreadable(exc, root, explicit)]
    if found is None:
        return None, Config(), []
    config, problems = validate_config(found.table, found.path)
    locs = Scanner(found.text).scan().locs
    starts = [0] + [i + 1 for i, ch in enumerate(found.text) if ch == "\n"]
    prefix = f"{found.path}: "
    placed = []
    for problem in problems:
        line = column = None
        path = (*found.at, *problem.key)
        for size in range(len(path), 0, -1):  # the key itself, else the nearest table
            loc = locs.get(path[:size])
            if loc is not None:
                line = bisect.bisect_right(starts, loc.key_start)
                column = loc.key_start - starts[line - 1] + 1
                break
        placed.append(
            PlacedProblem(
                str(found.path),
                line,
                column,
                problem.message.removeprefix(prefix),
                problem.tip,
            )
        )
    placed.sort(key=lambda p: (p.line or 0, p.column or 0))
    return found, config, placed


def _unreadable(exc: ConfigError, root: Path, explicit: Path | None) -> PlacedProblem:
    """A file that cannot be read as configuration, placed where TOML says when it says."""
    from govern.sources.tomlpos import error_message, error_position

    file, message, line, column = str(explicit or root), exc.message, None, None
    for name in (explicit, root / ".govern.toml", root / "pyproject.toml"):
        if name is None or not message.startswith(f"{name}: "):
            continue
        file, message = str(name), message.removeprefix(f"{name}: ")
        if exc.tip == _SYNTAX_TIP:  # tomllib's message: its position, then the rest
            raw = read_bounded(name)
            text = "" if isinstance(raw, Unreadable) else raw.decode("utf-8", "replace")
            line, column = error_position(ValueError(message), text.splitlines())
            message = error_message(ValueError(message))
        break
    return PlacedProblem(file, line, column, message, exc.tip)
