"""A starting configuration (``govern init``), written from what the repository shows.

It asks only the clone and its files, never the network: the sources (the audit's
discovery), the forge and the base branch (the ``origin`` remote and the clone's default
branch: :mod:`govern.git.branches`), the CI providers (the workflow files present) and the
runtime profiles (``requires-python``). Every key written is commented with what it does
and its default; what could not be found is written commented out, with what to fill in.
The text is checked the way ``govern config check`` checks it before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from govern.audit import repository_name
from govern.config import Config
from govern.errors import ForgeError, UsageError
from govern.forge.remote import parse_remote
from govern.git.branches import local_default_branches, remote_url
from govern.git.runner import environment
from govern.sources.discover import discover
from govern.sources.reading import Unreadable, read_bounded
from govern.tomltables import InvalidToml, parse_toml, toml_string

__all__ = ["CONFIG_NAME", "Found", "find", "render", "write"]

CONFIG_NAME = ".govern.toml"
# CPython's minor versions a profile may name, oldest first.
PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")


@dataclass(slots=True)
class Found:
    """What ``govern init`` found in a repository."""

    sources: list[str] = field(default_factory=list)  # root-relative POSIX paths
    repository: str | None = None  # host/owner/name, as the exclusion ids name it
    host: str | None = None
    path: str | None = None  # owner/repo (group/sub/project on GitLab)
    forge: str | None = None  # "github" | "gitlab" | None
    base: str | None = None
    workflows: list[str] = field(default_factory=list)  # .github/workflows/*.yml names
    gitlab_ci: bool = False
    buildkite: bool = False
    requires_python: str | None = None
    pythons: list[str] = field(default_factory=list)  # the profiles' versions

    def ci_kinds(self) -> list[str]:
        """The CI providers whose files are present."""
        kinds = ["github-actions"] if self.workflows else []
        kinds += ["gitlab"] if self.gitlab_ci else []
        return kinds + (["buildkite"] if self.buildkite else [])


def find(root: Path) -> Found:
    """What the repository at ``root`` shows (no network)."""
    found = Found()
    found.sources = [p.relative_to(root).as_posix() for p in discover(root)]
    env = environment()
    url = remote_url(root, "origin", env=env)
    if url:
        try:
            remote = parse_remote(url)
        except ForgeError:
            remote = None
        if remote is not None:
            found.host, found.path = remote.host, remote.path
            if remote.host == "github.com" and remote.path.count("/") == 1:
                found.forge = "github"
            elif remote.host == "gitlab.com" or remote.host.startswith("gitlab."):
                found.forge = "gitlab"
    found.repository = repository_name(root, Config()) or None  # the ids' default, kept
    branches = local_default_branches(root, "origin", env=env)
    found.base = branches[0] if branches else None
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        found.workflows = sorted(
            p.name for p in workflows.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file()
        )
    found.gitlab_ci = (root / ".gitlab-ci.yml").is_file()
    found.buildkite = any(
        (root / ".buildkite" / name).is_file() for name in ("pipeline.yml", "pipeline.yaml")
    )
    found.requires_python, found.pythons = _pythons(root / "pyproject.toml")
    return found


def _pythons(pyproject: Path) -> tuple[str | None, list[str]]:
    """``requires-python`` and the oldest and newest Python versions it admits."""
    raw = read_bounded(pyproject) if pyproject.is_file() else None
    if raw is None or isinstance(raw, Unreadable):
        return None, []
    try:
        project = parse_toml(raw).get("project")
    except InvalidToml:
        return None, []
    text = project.get("requires-python") if isinstance(project, dict) else None
    if not isinstance(text, str):
        return None, []
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return text, []
    admitted = [v for v in PYTHONS if spec.contains(f"{v}.0") or spec.contains(f"{v}.99")]
    return text, list(dict.fromkeys(admitted[:1] + admitted[-1:]))


def render(found: Found) -> str:
    """The commented ``.govern.toml`` for what was found."""
    out: list[str] = []
    add = out.append
    add("# govern's configuration, written by `govern init` from what this repository shows.")
    add("# Every key: docs/configuration.md. Check it after editing: govern config check.")
    add("# A key written commented out was not found: fill it in and remove the '#'.")
    add("")
    add('# The policy the audit applies: "default", "strict", "library" or a policy file.')
    add('# Default: "default".')
    add('# policy = "default"')
    add("")
    add("# Requirement sources: the audit finds them on its own; these are what it finds now:")
    for source in found.sources or ["(none yet)"]:
        add(f"#   {source}")
    add("# include adds more (globs relative to the root), exclude leaves some out.")
    add("# Default: none.")
    add('# include = ["deps/**/*.pip"]')
    add('# exclude = ["tests/fixtures/**"]')
    add("")
    add("# The repository's name, part of each exclusion's id. Default: from the origin remote.")
    if found.repository:
        add(f"repository = {toml_string(found.repository)}")
    else:
        add('# repository = "github.com/OWNER/REPO"  # TODO: no origin remote was found')
    add('# The project\'s URL: resolves "#123" in reasons. Default: none.')
    if found.host and found.path:
        add(f"forge = {toml_string(f'https://{found.host}/{found.path}')}")
    else:
        add('# forge = "https://github.com/OWNER/REPO"  # TODO: no origin remote was found')
    add("")
    _verify_keys(found, add)
    _propose(found, add)
    _ci(found, add)
    _profiles(found, add)
    add("# Reminders ([notify]) and the dashboard's secrets ([web]): see docs/configuration.md.")
    return "\n".join(out) + "\n"


def _ci_names(found: Found) -> list[str]:
    """The CI tables written active (their required keys found)."""
    names = []
    if found.workflows and found.forge == "github":
        names.append("github")
    if found.gitlab_ci and found.forge == "gitlab":
        names.append("gitlab")
    return names


def _verify_keys(found: Found, emit: Callable[[str], None]) -> None:
    names = _ci_names(found)
    emit("# The CI provider that verifies candidates (a [ci.NAME] below). Default: none.")
    if names:
        emit(f"# TODO: uncomment once the workflow accepts govern's inputs (see [ci.{names[0]}]).")
        emit(f"# verify-with = {toml_string(names[0])}")
    else:
        emit('# verify-with = "local"  # TODO: name a [ci.NAME] table')
    emit("# Runs per candidate before it waits for a person (1 to 20). Default: 3.")
    emit("# verify-attempts = 3")
    emit("")


def _propose(found: Found, add: Callable[[str], None]) -> None:
    add("# How relaxations are proposed.")
    add("[propose]")
    add('# "git" pushes a branch; "github" or "gitlab" also opens the pull or merge request.')
    add('# Default: "git".')
    if found.forge:
        add(f"via = {toml_string(found.forge)}")
        variable = "GITHUB_TOKEN" if found.forge == "github" else "GITLAB_TOKEN"
        add(f"# The variable holding the forge's token (never the token). Default: {variable}.")
        add(f"# token-env = {toml_string(variable)}")
    else:
        add('# via = "github"  # TODO: the origin remote is on no forge govern knows')
    add('# The git remote branches are pushed to. Default: "origin".')
    add('remote = "origin"')
    add("# The branch proposals target. Default: the branch the remote's HEAD names.")
    if found.base:
        add(f"base = {toml_string(found.base)}")
    else:
        add('# base = "main"  # TODO: no default branch was found in this clone')
    add('# "pull-request", "remind" or "none". Default: "pull-request".')
    add('# propose = "pull-request"')
    add('# Labels of the change request. Default: ["dependencies"].')
    add('# labels = ["dependencies"]')
    add("")


def _ci(found: Found, add: Callable[[str], None]) -> None:
    reference = "# The provider's keys: docs/configuration.md#ci-providers."
    if found.workflows:
        workflow = next((w for w in found.workflows if "govern" in w), found.workflows[0])
        active = found.forge == "github"
        c = "" if active else "# "
        add("# GitHub Actions: govern dispatches the workflow once per candidate; it must take")
        add("# govern's inputs (docs/commands/verify.md#configured-providers).")
        if len(found.workflows) > 1:
            add(f"# Workflows present: {', '.join(found.workflows)}.")
        add(reference)
        if not active:
            add("# TODO: the origin remote is not on GitHub: fill in repository, then uncomment.")
        add(f"{c}[ci.github]")
        add(f'{c}provider = "github-actions"  # required')
        add(f"{c}repository = {toml_string(found.path or 'OWNER/REPO')}  # owner/name; required")
        add(f"{c}workflow = {toml_string(workflow)}  # the file under .github/workflows; required")
        add('# The branch the run is dispatched on. Default: "main".')
        add(f"{c}ref = {toml_string(found.base or 'main')}")
        add(
            '# token-env = "GITHUB_TOKEN"  # the variable holding the token. Default: GITHUB_TOKEN.'
        )
        add("")
    if found.gitlab_ci:
        active = found.forge == "gitlab"
        c = "" if active else "# "
        add("# GitLab CI: govern runs the project's pipeline once per candidate.")
        add(reference)
        if not active:
            add("# TODO: the origin remote is not on GitLab: fill in project, then uncomment.")
        add(f"{c}[ci.gitlab]")
        add(f'{c}provider = "gitlab"  # required')
        add(f"{c}project = {toml_string(found.path or 'GROUP/PROJECT')}  # group/project; required")
        add('# The branch the pipeline runs on. Default: "main".')
        add(f"{c}ref = {toml_string(found.base or 'main')}")
        add(
            '# token-env = "GITLAB_TOKEN"  # the variable holding the token. Default: GITLAB_TOKEN.'
        )
        add("")
    if found.buildkite:
        add("# Buildkite: govern creates a build of the pipeline once per candidate.")
        add(reference)
        add("# TODO: fill in the organization and pipeline slugs, then uncomment.")
        add("# [ci.buildkite]")
        add('# provider = "buildkite"')
        add('# organization = "ORGANIZATION"')
        add('# pipeline = "PIPELINE"')
        add(f'# branch = {toml_string(found.base or "main")}  # Default: "main".')
        add("")


def _profiles(found: Found, add: Callable[[str], None]) -> None:
    add("# Runtime profiles: the Pythons and platforms candidates must install on.")
    add("# Default: one profile, this machine.")
    if found.pythons:
        written = toml_string(found.requires_python or "")
        add(f"# From requires-python = {written}: the oldest and newest.")
        for version in found.pythons:
            add(f"[profiles.py{version.replace('.', '')}]")
            add("# The profile's Python version. Default: the running interpreter.")
            add(f"python = {toml_string(version)}")
            add("# Wheel platform tags. Default: this machine's.")
            add('# platforms = ["manylinux_2_28_x86_64"]')
            add("")
    else:
        why = (
            f"requires-python = {toml_string(found.requires_python)} admits no known Python"
            if found.requires_python
            else "no requires-python in pyproject.toml"
        )
        add(f"# TODO: {why}; name the Python you run on.")
        add("# [profiles.default]")
        add('# python = "3.12"')
        add("")


def write(root: Path, text: str, *, force: bool) -> Path:
    """Write ``text`` as root's .govern.toml; an existing one only with ``force``."""
    target = root / CONFIG_NAME
    if target.exists() and not force:
        raise UsageError(
            f"{target} exists; not overwritten",
            tip="Pass --force to replace it, or --stdout to print the new one.",
        )
    target.write_text(text, encoding="utf-8")
    return target
