"""Which branch of a clone is its default, asked of the clone alone (no network).

A proposal's base is the branch the remote's HEAD names (``git ls-remote --symref``, in
:meth:`govern.git.push.Pusher.default_branch`); when the remote's HEAD names none (a bare
repository whose HEAD points at a branch never pushed), the clone's own idea of its default
branch is asked here, and ``govern init`` writes it as ``base``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from govern.git.runner import GitError, run

__all__ = ["BASE_TIP", "local_default_branches", "remote_url"]

#: What to do when no base branch can be found.
BASE_TIP = (
    'Set the base branch: base = "main" under [propose] in .govern.toml '
    "(or [tool.govern.propose] in pyproject.toml), or push the default branch and point "
    "the remote's HEAD at it (git symbolic-ref HEAD refs/heads/main, in the remote)."
)


def _git(root: Path, env: Mapping[str, str], executable: str, *args: str) -> str | None:
    """git's stdout, stripped, or None when it fails (or git cannot be run)."""
    try:
        proc = run(executable, args, cwd=root, env=env, timeout=30.0)
    except GitError:  # a question left unanswered, not an error
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def remote_url(
    root: Path, remote: str, *, env: Mapping[str, str], executable: str = "git"
) -> str | None:
    """The URL of ``remote`` in the clone at root, or None."""
    return _git(root, env, executable, "remote", "get-url", "--", remote) or None


def local_default_branches(
    root: Path, remote: str, *, env: Mapping[str, str], executable: str = "git"
) -> list[str]:
    """The clone's candidates for its default branch, best first, each a local branch:
    what ``refs/remotes/REMOTE/HEAD`` names (set by ``git clone``), ``init.defaultBranch``,
    the current branch when it tracks ``remote``, then ``main`` and ``master``."""

    def local(branch: str) -> bool:
        return bool(branch) and (
            _git(root, env, executable, "rev-parse", "--verify", "-q", f"refs/heads/{branch}")
            is not None
        )

    found: list[str] = []
    head = _git(root, env, executable, "symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD")
    if head and head.startswith(f"refs/remotes/{remote}/"):
        found.append(head.removeprefix(f"refs/remotes/{remote}/"))
    configured = _git(root, env, executable, "config", "--get", "init.defaultBranch")
    if configured and local(configured):
        found.append(configured)
    current = _git(root, env, executable, "symbolic-ref", "-q", "--short", "HEAD")
    if current and _git(root, env, executable, "config", "--get", f"branch.{current}.remote") == (
        remote
    ):
        found.append(current)
    found += [name for name in ("main", "master") if local(name)]
    return list(dict.fromkeys(found))
