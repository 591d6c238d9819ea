"""The one place that builds the application's parts from configuration.

Settings, the index settings, runtime profiles, CI providers, the store, and the outgoing
side (git remotes, forges, reminder channels), for the CLI, the daemon and the web app alike;
one verification call, one proposal call and one digest call over them.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from govern.config import Config, ProposeConfig, load_config
from govern.errors import ConfigError, GovernError, UsageError
from govern.exclusions.states import Via
from govern.redact import SECRET_NAME, ConfiguredSecrets, secret_forms

if TYPE_CHECKING:
    # Each function imports what it builds: a command loads only its own stack (`govern
    # status` no HTTP, CI, forge, proposal or outbox code; see govern.cli).
    import httpx

    from govern.ci.base import Provider
    from govern.forge.base import Forge
    from govern.git.push import Pusher
    from govern.index.pipconfig import IndexSettings
    from govern.index.profiles import Profile
    from govern.notify.base import Notifier
    from govern.service.outcome import ProposeResult
    from govern.service.remind import DigestResult
    from govern.service.verify import ProviderFor, Verifier, VerifyOptions, VerifyResult
    from govern.store.db import Store

ADHOC = "command"  # the name of the provider that --command and --isolated make
_COMMAND_TIMEOUT = 3600.0  # seconds an ad hoc --command run may take by default


def settings(config_file: Path | None = None, root: Path | None = None) -> Config:
    """The configuration of ``root`` (default: here), or of ``config_file``."""
    return load_config(root or Path.cwd(), config_file)


def index(config: Config, index_url: str | None = None) -> IndexSettings:
    """Where the index is, and how to ask it (``--index-url``, config, pip's configuration)."""
    from govern.index.settings import index_settings

    return index_settings(config, index_url)


def optional_index(config: Config, index_url: str | None = None) -> IndexSettings | None:
    """The index settings, or None when none is configured and no pip can say its default."""
    from govern.index.pipconfig import IndexNotConfigured
    from govern.index.settings import index_settings

    try:
        return index_settings(config, index_url)
    except IndexNotConfigured:
        return None


def profiles(config: Config, names: list[str] | tuple[str, ...] = ()) -> list[Profile]:
    """The configured runtime profiles (only ``names``, when given)."""
    from govern.index.settings import profiles_from

    return profiles_from(config, names)


def store(db: str | None, config: Config, *, upgrade: bool = True) -> Store:
    """The store ``--db``, the environment or the configuration point at."""
    from govern.store.db import open_store

    return open_store(db, configured=config.database, upgrade=upgrade)


def ci_http() -> httpx.AsyncClient:
    """The HTTP client CI providers share (their APIs answer within 30 s; no redirects)."""
    import httpx

    return httpx.AsyncClient(timeout=30.0, follow_redirects=False)


@dataclass(frozen=True, slots=True)
class CIProviders:
    """Every configured CI provider by name, and the one that runs on a profile."""

    by_name: dict[str, Provider]
    provider_for: ProviderFor


def configured_secrets(
    config: Config | None,
    *,
    store: Store | None = None,
    index: IndexSettings | None = None,
    environ: Mapping[str, str] | None = None,
) -> ConfiguredSecrets:
    """Every secret configuration names, by variable and by value: the variables of
    ``config`` and of each tracked repository's configuration (its ``[notify]`` and
    ``[propose]`` are read when proposing), those named like credentials, and the index's
    credentials (from its URLs or netrc)."""
    environ = os.environ if environ is None else environ
    configs = [config or Config(), *_tracked_configs(store)]
    variables = {name for c in configs for name in c.secret_variables()}
    variables.update(name for name in environ if SECRET_NAME.search(name))
    values = [environ[name] for name in variables if environ.get(name)]
    if index is not None:
        from govern.index.client import credential_values

        values += credential_values(index)
    return ConfiguredSecrets(frozenset(variables), secret_forms(values))


def _tracked_configs(store: Store | None) -> list[Config]:
    """The configuration of each repository the store tracks (one unreadable is skipped:
    its own sync says why)."""
    if store is None:
        return []
    from sqlmodel import select

    from govern.store.models import Repository

    with store.session() as session:
        roots = sorted(set(session.exec(select(Repository.root)).all()))
    found: list[Config] = []
    for root in roots:
        try:
            found.append(load_config(Path(root)))
        except (GovernError, OSError):
            continue
    return found


def ci_providers(
    config: Config,
    http: httpx.AsyncClient,
    *,
    command: str | None = None,
    isolated: bool = False,
    timeout: float | None = None,
    secrets: ConfiguredSecrets | None = None,
) -> CIProviders:
    """The configured providers, plus an ad hoc one for ``--command``/``--isolated``; a
    local command is handed none of ``secrets``' variables (default: ``config``'s)."""
    from govern.ci.command import Command
    from govern.ci.providers import build

    root = config.path.parent if config.path is not None else Path.cwd()
    ad_hoc = command is not None or isolated
    withheld = (secrets or configured_secrets(config)).variables
    providers: dict[str, Provider] = {}
    for ci in config.ci:
        try:
            providers[ci.name] = build(
                ci, http=http, environ=os.environ, root=root, withheld=withheld
            )
        except ConfigError:
            if not ad_hoc:
                raise
            # An ad hoc run needs none of the configured providers (a hosted one may lack
            # its token here); their runs still going wait for a call that can reach them.
    if ad_hoc and ADHOC in providers:
        raise UsageError(
            f"a configured provider is named {ADHOC!r}, the name --command and --isolated use",
            tip=f"Rename [tool.govern.ci.{ADHOC}] (its runs would be mistaken for ad hoc ones).",
        )
    adhoc: Provider | None = None
    if ad_hoc:
        argv = _argv(command) if command is not None else []
        adhoc = Command(
            ADHOC,
            command=argv,
            isolated=isolated,
            timeout=timeout or _COMMAND_TIMEOUT,
            workdir=root,
            withheld=withheld,
        )
        providers[ADHOC] = adhoc
    by_profile = {p.name: p.ci for p in config.profiles}

    def provider_for(profile: str) -> Provider | None:
        if adhoc is not None:
            return adhoc
        name = by_profile.get(profile) or config.verify_with
        return providers.get(name) if name else None

    return CIProviders(providers, provider_for)


def _argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--command {command!r} cannot be split: {exc}") from None
    if not argv:
        raise UsageError("--command is empty", tip="Give the check to run, e.g. 'pytest -x'.")
    return argv


def verifier(
    store: Store,
    config: Config | None,
    ci: CIProviders | None = None,
    *,
    index: IndexSettings | None = None,
    clock: Callable[[], datetime] | None = None,
    secrets: ConfiguredSecrets | None = None,
) -> Verifier:
    """The verifier over a store and the CI providers; without ``ci`` it starts no run and
    concludes only what a provider it is later given reports (the dashboard's webhooks).
    Every configured secret (:func:`configured_secrets`) is scrubbed out of what it stores;
    ``clock``: the time (default: now, in UTC)."""
    from govern.locks.installed import pins_for
    from govern.service.verify import Verifier
    from govern.store.columns import utcnow

    return Verifier(
        store,
        provider_for=ci.provider_for if ci is not None else (lambda _profile: None),
        providers=ci.by_name if ci is not None else {},
        index=index,
        attempts=(config or Config()).verify_attempts,
        clock=clock or utcnow,
        secrets=secrets or configured_secrets(config, store=store, index=index),
        # A run installs the candidate with its intent's locks regenerated for it.
        pins_for=pins_for(index),
    )


async def verify_once(
    store: Store, config: Config, settings: IndexSettings | None, options: VerifyOptions
) -> VerifyResult:
    """One verification call: new candidates' runs started, runs still going collected."""
    secrets = configured_secrets(config, store=store, index=settings)
    async with ci_http() as http:
        ci = ci_providers(
            config,
            http,
            command=options.command,
            isolated=options.isolated,
            timeout=options.timeout,
            secrets=secrets,
        )
        if not ci.by_name:
            raise UsageError(
                "no CI provider to verify with",
                tip="Give --command '...' (with --isolated for a fresh venv), or configure "
                '[tool.govern.ci.NAME] with provider = "command" (or github-actions, '
                "buildkite, gitlab) and verify-with = NAME.",
            )
        return await verifier(store, config, ci, index=settings, secrets=secrets).run(
            options.query,
            profiles=options.profiles,
            wait=options.wait,
            poll_interval=options.poll_interval,
            deadline=options.wait_timeout,
        )


class Outgoing:
    """Each repository's git remote, forge and reminder channels, built once per root and
    setting, for the proposer and the digest."""

    def __init__(self, http: httpx.AsyncClient, environ: Mapping[str, str]) -> None:
        self.http = http
        self.environ = environ
        self._pushers: dict[tuple[Path, str], Pusher] = {}
        self._forges: dict[tuple[Path, ProposeConfig], Forge | None] = {}

    def pusher_for(self, root: Path, settings: ProposeConfig) -> Pusher:
        """The clone's remote that branches are pushed to."""
        from govern.git.push import Pusher

        key = (root, settings.remote)
        if key not in self._pushers:
            self._pushers[key] = Pusher(
                root,
                remote=settings.remote,
                token_env=settings.token_env,
                environ=self.environ,
                author=settings.author_identity(),
            )
        return self._pushers[key]

    def forge_for(self, root: Path, settings: ProposeConfig) -> Forge | None:
        """The forge of ``via`` (None for ``via = "git"``), one per repository and settings:
        an App's installation token is asked for once."""
        from govern.forge.remote import forge_for

        key = (root, settings)
        if key not in self._forges:
            remote = None
            if settings.via != Via.GIT and not settings.forge:
                remote = self.pusher_for(root, settings).url
            self._forges[key] = (
                None
                if settings.via == Via.GIT
                else forge_for(
                    settings.via, remote, settings=settings, client=self.http, environ=self.environ
                )
            )
        return self._forges[key]

    def notifiers_for(self, root: Path, config: Config) -> list[Notifier]:
        """The channels of ``config.notify``; the issue channel comments through the forge,
        and when that cannot be built every reminder says why instead of failing the others."""
        from govern.forge.remote import parse_remote
        from govern.notify import channels

        settings = config.propose
        forge: Forge | None = None
        host = ""
        why = 'via = "git" has no forge to comment through: set via = "github"'
        if "issue" in config.notify.channels and settings.via != Via.GIT:
            try:
                forge = self.forge_for(root, settings)
                host = parse_remote(settings.forge or self.pusher_for(root, settings).url).host
            except GovernError as exc:
                forge, why = None, f"no forge: {exc.message}"
        base = config.path.parent if config.path is not None else root
        return channels.build(
            config.notify,
            http=self.http,
            environ=self.environ,
            forge=forge,
            host=host,
            why_no_forge=why,
            base=base,
        )


async def propose_once(
    store: Store,
    query: str | None,
    *,
    dry_run: bool,
    environ: Mapping[str, str] | None = None,
) -> ProposeResult:
    """One proposal call: branches, change requests and reminders, each sent once; the
    secrets they need come from ``environ`` (default: the process's environment)."""
    from govern.service.propose import Proposer

    async with ci_http() as http:
        parts = Outgoing(http, os.environ if environ is None else environ)
        proposer = Proposer(
            store,
            pusher_for=parts.pusher_for,
            forge_for=parts.forge_for,
            notifiers_for=parts.notifiers_for,
        )
        return await proposer.run(query, dry_run=dry_run)


async def digest_once(store: Store, *, environ: Mapping[str, str] | None = None) -> DigestResult:
    """Every repository's pending issue and digest, as its ``[tool.govern.notify]`` says."""
    from govern.service.remind import Digester

    async with ci_http() as http:
        parts = Outgoing(http, os.environ if environ is None else environ)
        digester = Digester(store, forge_for=parts.forge_for, notifiers_for=parts.notifiers_for)
        return await digester.run()
