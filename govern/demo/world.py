"""The demo's workspace and its loop, told step by step through a callback.

The workspace (a directory the caller owns): ``index/`` (the Simple API tree),
``dists/`` (the wheels as built), ``repo/`` (a git repository whose ``requirements.txt``
caps ``demo-cupy < 14.1.0`` with its reason, and its ``.govern.toml``), ``remote.git``
(the bare remote proposals are pushed to). The loop runs through the same service
functions as ``govern track``, ``poll``, ``verify`` and ``propose``; nothing here prints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from govern.demo.index import LocalIndex
from govern.demo.wheels import build_wheel, sha256
from govern.git.runner import environment, failed, run
from govern.tomltables import toml_string

if TYPE_CHECKING:
    from govern.config import Config
    from govern.index.pipconfig import IndexSettings
    from govern.service.poll import PollResult
    from govern.service.verify import VerifyResult
    from govern.store.db import Store

PACKAGE = "demo-cupy"
MODULE = "demo_cupy"
CAP = "<14.1.0"
BROKEN = "14.1.0"
FIXED = "14.1.1"
BRANCH = "main"
# Each release as the index shows it: its version, whether it breaks at import, when it
# was uploaded (the story of CuPy 14.1.0 and 14.1.1, May 2026).
RELEASES = {
    "14.0.1": (False, "2026-03-10T12:00:00Z"),
    "14.1.0": (True, "2026-05-05T12:00:00Z"),
    "14.1.1": (False, "2026-05-12T12:00:00Z"),
}
CHECK = '{python} -c "import demo_cupy"'
REQUIREMENTS = f"""\
# The runtime image's GPU array library (a CuPy-like package, for the demo).
# govern: reason="{PACKAGE} {BROKEN} imports a test-only module at import time: the image breaks"
# govern: bad={BROKEN} owner=@runtime-team
# govern: verify="{{python}} -c 'import {MODULE}'"
{PACKAGE}{CAP}
"""
_GIT_TIMEOUT = 60.0
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Demo Maintainer",
    "GIT_AUTHOR_EMAIL": "maintainer@demo.invalid",
    "GIT_COMMITTER_NAME": "Demo Maintainer",
    "GIT_COMMITTER_EMAIL": "maintainer@demo.invalid",
    "GIT_AUTHOR_DATE": "2026-05-06T09:00:00Z",
    "GIT_COMMITTER_DATE": "2026-05-06T09:00:00Z",
}

Say = Callable[[str], None]


def config_text(index_url: str, repository: str) -> str:
    """The repository's ``.govern.toml``: the local index, the local check, ``[propose]``."""
    return f"""\
# govern demo: the local index, a local check in a fresh environment, and proposals
# pushed as branches to the bare remote (origin).
repository = "{repository}"
index-url = "{index_url}"
verify-with = "local"

[ci.local]
provider = "command"
command = {toml_string(CHECK)}
isolated = true
timeout = 300

[propose]
via = "git"
remote = "origin"
base = "{BRANCH}"
"""


def wheel_files(version: str) -> dict[str, str]:
    """The package's files: 14.1.0's ``__init__`` fails at import, the others work."""
    body = f'"""A CuPy-like package for govern demo."""\n\n__version__ = "{version}"\n'
    if RELEASES[version][0]:
        body = (
            f'"""A CuPy-like package for govern demo (this release is broken)."""\n\n'
            "# Like CuPy 14.1.0, which imported pytest at import time: a test-only module\n"
            "# that no runtime environment has.\n"
            "import demo_cupy_testing  # noqa: F401\n\n"
            f'__version__ = "{version}"\n'
        )
    return {f"{MODULE}/__init__.py": body}


@dataclass
class Workspace:
    """The demo's directories, and its index while it serves."""

    root: Path
    index: LocalIndex
    name: str = "demo/runtime-image"  # the repository's name in the store
    wheels: dict[str, Path] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def remote(self) -> Path:
        return self.root / "remote.git"

    def publish(self, version: str) -> None:
        """Build the release's wheel (deterministic) and add it to the index."""
        path = build_wheel(
            self.root / "dists" / version, PACKAGE, version, files=wheel_files(version)
        )
        self.wheels[version] = path
        self.index.publish(PACKAGE, path, RELEASES[version][1])

    def git(self, *args: str, cwd: Path | None = None) -> str:
        """Run git in the repository (or ``cwd``); its output, or GitError."""
        where = cwd or self.repo
        proc = run(
            "git",
            list(args),
            cwd=where,
            env={**environment(), **_IDENTITY},
            timeout=_GIT_TIMEOUT,
        )
        if proc.returncode != 0:
            raise failed(list(args), proc, where)
        return proc.stdout.decode("utf-8", "replace")

    def create_repository(self) -> None:
        """The repository with its capped line and configuration, pushed to a bare remote."""
        self.repo.mkdir(parents=True)
        bare = ["init", "--quiet", "--bare", f"--initial-branch={BRANCH}", str(self.remote)]
        self.git(*bare, cwd=self.root)
        self.git("init", "--quiet", f"--initial-branch={BRANCH}")
        (self.repo / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
        config = config_text(self.index.url, self.name)
        (self.repo / ".govern.toml").write_text(config, encoding="utf-8")
        self.git("add", "requirements.txt", ".govern.toml")
        self.git("commit", "--quiet", "-m", f"Cap {PACKAGE} below {BROKEN}: it breaks at import")
        self.git("remote", "add", "origin", str(self.remote))
        self.git("push", "--quiet", "origin", BRANCH)

    def branch_line(self, branch: str) -> str | None:
        """The package's specifier on ``branch`` of the remote (None: no such line)."""
        text = self.git("show", f"{branch}:requirements.txt", cwd=self.remote)
        return relaxed_specifier(text)

    def branch_diff(self, branch: str) -> str:
        """What ``branch`` changes against the base branch, on the remote."""
        return self.git("diff", f"{BRANCH}...{branch}", cwd=self.remote)


def relaxed_specifier(requirements: str) -> str | None:
    """The specifier of the package's line in a requirements file's text."""
    for raw in requirements.splitlines():
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name == PACKAGE:
            return str(requirement.specifier)
    return None


@dataclass
class Outcome:
    """What the demo found: the branch it pushed and the line on it."""

    branch: str | None = None
    line: str | None = None
    problems: list[str] = field(default_factory=list)


def run_loop(workspace: Workspace, store: Store, say: Say) -> Outcome:
    """Track, poll, verify; publish the fix; poll, verify, propose. Told through ``say``."""
    from govern import application
    from govern.audit import resolve_targets
    from govern.service.track import TrackOptions, track

    outcome = Outcome()
    config = application.settings(root=workspace.repo)
    settings = application.index(config)

    say(f"1. track: audit {workspace.repo.name}/ and record its exclusions in the store")
    root, files = resolve_targets([workspace.repo], workspace.repo)
    tracked = track(store, root, files, config=config, options=TrackOptions())
    say(
        f"   {tracked.counts.added} exclusion added: {PACKAGE} {CAP} "
        f"(requirements.txt, with the reason and bad={BROKEN} of its # govern: lines)"
    )

    say("2. poll: ask the local index about every tracked package")
    polled = _poll(store, config, settings)
    say(f"   {polled.summary()}")
    if not polled.found:
        say(f"   no candidate: {BROKEN} is the release the cap keeps out, and it is known bad")

    say("3. verify: try every candidate with the check in a fresh environment")
    verified = _verify(store, config, settings)
    say(f"   {verified.started} run(s): nothing to try yet")
    say(f"   the check itself ({CHECK}), on the releases at hand:")
    for version in ("14.0.1", BROKEN):
        conclusion, detail = _try(workspace, config, settings.index_url, version)
        admitted = "admitted today" if version != BROKEN else "kept out"
        say(f"   {version} ({admitted}): {conclusion} ({detail})")
        expected = "failed" if version == BROKEN else "passed"
        if conclusion != expected:
            outcome.problems.append(f"the check on {version} {conclusion}, not {expected}")

    say(f"4. publish {PACKAGE} {FIXED} (fixed) to the index")
    workspace.publish(FIXED)

    say("5. poll again")
    polled = _poll(store, config, settings)
    say(f"   {polled.summary()}")
    for found in polled.found:
        say(f"   candidate: {found['package']} {found['version']} for {found['clause']}")

    say("6. verify again")
    verified = _verify(store, config, settings)
    for ran in verified.runs:
        what = f"{ran['package']} {ran['version']}"
        if ran["kind"] != "candidate":
            what = f"the {ran['kind']} (verify=) on {ran['ran']}"
        say(
            f"   {ran['conclusion']}: {what} (installed {ran['installed'] or 'nothing'}) "
            f"=> {ran['verdict']}: {ran['why']}"
        )
    for error in verified.errors:
        outcome.problems.append(f"verify: {error}")

    say(f"7. propose: push the branch relaxing the line to {workspace.remote.name}")
    proposed = asyncio.run(application.propose_once(store, None, dry_run=False, environ={}))
    for item in proposed.proposals:
        say(f"   {item.state}: {item.ref.package} {item.ref.requirement} -> {item.new}")
        if item.message:
            say(f"   {item.message}")
        if item.branch:
            outcome.branch = item.branch
    if outcome.branch is None:
        outcome.problems.append("no branch was proposed")
    else:
        outcome.line = workspace.branch_line(outcome.branch)
        say(f"   branch {outcome.branch}: {PACKAGE} {outcome.line}")
    return outcome


def _poll(store: Store, config: Config, settings: IndexSettings) -> PollResult:
    from govern import application
    from govern.service.poll import poll_index

    profiles = application.profiles(config)
    return asyncio.run(poll_index(store, settings, profiles, refresh=True))


def _verify(store: Store, config: Config, settings: IndexSettings) -> VerifyResult:
    from govern import application
    from govern.service.verify import VerifyOptions

    return asyncio.run(application.verify_once(store, config, settings, VerifyOptions()))


def _try(workspace: Workspace, config: Config, index_url: str, version: str) -> tuple[str, str]:
    """The configured check on one release, in a fresh environment, as verify runs it
    (recorded nowhere): whether it can tell a broken release from a good one."""
    from govern import application
    from govern.ci.base import Trial
    from govern.index.model import DistributionFile, FileKind

    wheel = workspace.wheels[version]
    tags = parse_wheel_filename(wheel.name)[3]
    file = DistributionFile(
        filename=wheel.name,
        url=f"{index_url.rstrip('/').removesuffix('/simple')}/files/{wheel.name}",
        kind=FileKind.WHEEL,
        version=Version(version),
        tags=frozenset(tags),
        hashes={"sha256": sha256(wheel)},
    )
    trial = Trial(
        package=PACKAGE,
        version=Version(version),
        profile="default",
        correlation_id=f"govern-demo-{version}",
        clause=CAP,
        index_url=index_url,
        files=(file,),
        files_index=index_url,
    )

    async def once() -> tuple[str, str]:
        async with application.ci_http() as http:
            provider = application.ci_providers(config, http).by_name["local"]
            started = await provider.start(trial)
        status = started.status
        said = [text.strip() for text in (status.log_excerpt or "").splitlines() if "Error" in text]
        return str(status.conclusion), "; ".join(filter(None, [status.detail, *said[-1:]]))

    return asyncio.run(once())
