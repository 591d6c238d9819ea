"""The one way govern runs the ``git`` command, and the one family of its errors.

Notes: docs/internals.md#git.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from govern.errors import GovernError

__all__ = [
    "REPOSITORY_ENV",
    "GitError",
    "GitMissing",
    "environment",
    "failed",
    "git_error",
    "run",
    "stderr_text",
    "strip_userinfo",
    "toplevel",
    "unpack_tree",
]


class GitError(GovernError):
    """git could not be run, or could not answer (not a repository, a timeout, ...)."""


class GitMissing(GitError):
    """The git executable could not be started at all."""


# Variables that point git at one particular repository (`git rev-parse --local-env-vars`).
# A Git object names its repository by directory, so when govern runs inside a git hook
# (which sets GIT_DIR, GIT_INDEX_FILE, ...) these must not redirect it elsewhere.
REPOSITORY_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_DIR",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NAMESPACE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
)

# Options before the subcommand: stable, parseable output whatever the user's config says.
_GLOBAL_OPTIONS = (
    "--no-pager",
    "--literal-pathspecs",  # a path is a path, never a glob
    "-c",
    "core.quotepath=off",
    "-c",
    "color.ui=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "i18n.logOutputEncoding=UTF-8",
    "-c",
    "log.diffMerges=first-parent",  # what -m means for a merge (older git ignores the key)
)

_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@")


def strip_userinfo(text: str) -> str:
    """Drop ``user:password@`` from every URL in text, so no token reaches a message."""
    return _USERINFO_RE.sub(r"\1", text)


def git_error(message: str, *, tip: str | None = None, cls: type[GitError] = GitError) -> GitError:
    """A GitError whose message and tip carry no credentials."""
    return cls(strip_userinfo(message), tip=tip and strip_userinfo(tip))


def environment() -> dict[str, str]:
    """The environment git runs in: the caller's, minus repository overrides, plus ours."""
    env = {name: value for name, value in os.environ.items() if name not in REPOSITORY_ENV}
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
    return env


def stderr_text(stderr: bytes) -> str:
    """git's complaint on one line, without the ``fatal:`` prefix (at most 300 characters)."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line.removeprefix("fatal: ").removeprefix("error: ") for line in lines if line]
    text = "; ".join(lines) or "no message"
    return text if len(text) <= 300 else text[:297] + "..."


def run(
    executable: str,
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in cwd; failing to start or to finish in time raises GitError."""
    argv = [executable, *_GLOBAL_OPTIONS, *args]
    try:
        return subprocess.run(
            argv,
            check=False,
            capture_output=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            input=stdin if stdin is not None else b"",
        )
    except subprocess.TimeoutExpired:
        raise git_error(
            f"git {args[0]} did not finish within {timeout:g} s in {cwd}",
            tip="The repository may be very large or busy; try again, or allow a longer timeout.",
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise git_error(
            f"cannot run git ({executable}): {reason}",
            tip="Install git (https://git-scm.com/downloads) and make sure it is on PATH.",
            cls=GitMissing,
        ) from None


def failed(args: Sequence[str], proc: subprocess.CompletedProcess[bytes], cwd: Path) -> GitError:
    """The GitError for a git command that exited with an error."""
    stderr = stderr_text(proc.stderr)
    if "dubious ownership" in stderr:
        tip = f"Mark the repository as safe: git config --global --add safe.directory {cwd}"
    else:
        tip = "Run the same git command in that directory to see the full error."
    return git_error(f"git {args[0]} failed in {cwd}: {stderr}", tip=tip)


_NOT_A_REPOSITORY = (b"not a git repository", b"must be run in a work tree")


def toplevel(start: Path, executable: str, timeout: float, env: Mapping[str, str]) -> Path | None:
    """The top of the working tree containing the directory start; None outside any."""
    args = ("rev-parse", "--show-toplevel")
    proc = run(executable, args, cwd=start, env=env, timeout=timeout)
    if proc.returncode != 0:
        if any(marker in proc.stderr for marker in _NOT_A_REPOSITORY):
            return None
        raise failed(args, proc, start)
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    return Path(top) if top else None


def unpack_tree(archive: bytes, into: Path) -> None:
    """Write the files of ``git archive --format=tar``'s output into ``into``: regular files
    and directories only, never outside ``into`` (links and special files are skipped)."""
    import io
    import tarfile  # only where a tree is copied: not on every git command's import

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        tar.extractall(into, members=members, filter="data")
