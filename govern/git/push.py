"""Push one commit that changes one file to a branch of a remote, leaving the user's clone alone.

Notes: docs/internals.md#git.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from govern.errors import ForgeAuthError, ForgeError, ForgeUnavailable
from govern.git.branches import BASE_TIP, local_default_branches
from govern.git.runner import REPOSITORY_ENV, GitError, run, stderr_text, unpack_tree
from govern.redact import redact, scrub

__all__ = ["DEFAULT_AUTHOR", "PushError", "PushOutcome", "Pushed", "Pusher"]

DEFAULT_AUTHOR = ("govern", "govern@localhost")
"""Author and committer when none is given: the same on every machine, whatever the
user's git configuration says, so a proposal's commit names the tool that wrote it."""

TRAILER = "Govern-Proposal"

# The token reaches the askpass script through these variables, never through argv.
_TOKEN_VAR = "GOVERN_ASKPASS_TOKEN"  # noqa: S105 (a variable name)
_USER_VAR = "GOVERN_ASKPASS_USER"
_ASKPASS = f"""#!/bin/sh
case "$1" in
  [Uu]sername*) printf '%s\\n' "${_USER_VAR}" ;;
  *) printf '%s\\n' "${_TOKEN_VAR}" ;;
esac
"""

_AUTH_MARKERS = (
    "authentication failed",
    "could not read username",
    "could not read password",
    "permission denied",
    "invalid username or password",
    "returned error: 401",
    "returned error: 403",
    "terminal prompts disabled",
)
_UNAVAILABLE_MARKERS = (
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "timed out",
    "failed to connect",
    "network is unreachable",
    "returned error: 5",
    "the remote end hung up unexpectedly",
    "connection reset",
)
_REF_RE = re.compile(r"[A-Za-z0-9._/-]+")


class PushError(ForgeError):
    """A push (or a read of the remote) could not be done: a rejected push, a missing base, ..."""


class PushOutcome(StrEnum):
    """What :meth:`Pusher.push` did to the branch."""

    PUSHED = "pushed"  # created, or replaced a tip that was govern's
    UNCHANGED = "unchanged"  # it already held this change on the current base: no push
    FOREIGN = "foreign"  # it holds commits govern did not make: left alone, no push


@dataclass(frozen=True, slots=True)
class Pushed:
    """What :meth:`Pusher.push` left on the remote."""

    sha: str  # the branch's tip: the commit pushed, or the one already there
    branch: str
    url: str  # the remote's URL, redacted
    outcome: PushOutcome = PushOutcome.PUSHED

    @property
    def unchanged(self) -> bool:
        """The branch already held this change on the current base: nothing was pushed."""
        return self.outcome is PushOutcome.UNCHANGED


@dataclass(frozen=True, slots=True)
class _Session:
    """One temporary bare repository and the environment git runs in for it."""

    repo: Path
    env: dict[str, str]


class Pusher:
    """One remote of a clone: read its base branch, push a one-file commit to a branch."""

    def __init__(
        self,
        root: Path,
        *,
        remote: str = "origin",
        token_env: str | None = None,
        environ: Mapping[str, str] | None = None,
        author: tuple[str, str] | None = None,
        executable: str = "git",
        timeout: float = 120.0,
    ) -> None:
        """Read the remote's URL from the clone at root (``git remote get-url``)."""
        self._root = Path(root)
        self._executable = executable
        self._timeout = timeout
        source = os.environ if environ is None else environ
        self._env = {k: v for k, v in source.items() if k not in REPOSITORY_ENV}
        self._env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
        self._env.pop(_TOKEN_VAR, None)
        self._token = source.get(token_env) if token_env else None
        self._token_env = token_env
        self._author = author or DEFAULT_AUTHOR
        proc = self._git(self._root, self._env, "remote", "get-url", "--", remote)
        if proc.returncode != 0:
            raise PushError(
                f"the clone at {self._root} has no remote {remote!r}: {self._clean(proc.stderr)}",
                tip="Name an existing remote ([propose] remote), see `git remote -v`.",
            )
        self._url = os.fsdecode(proc.stdout.strip())
        self._remote = remote
        self.url = redact(self._url)
        """The remote's URL as it may be shown (credentials hidden)."""

    def __repr__(self) -> str:
        """``Pusher('<redacted url>')``."""
        return f"Pusher({self.url!r})"

    # -- running git ---------------------------------------------------------------------------

    def _git(
        self, cwd: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run git; a timeout becomes ForgeUnavailable, git missing a PushError."""
        try:
            return run(self._executable, args, cwd=cwd, env=env, timeout=self._timeout, stdin=stdin)
        except GitError as exc:
            cls = ForgeUnavailable if "did not finish" in str(exc) else PushError
            raise cls(self._scrub(str(exc)), tip=exc.tip and self._scrub(exc.tip)) from None

    def _scrub(self, text: str) -> str:
        """text without credentials: URLs redacted, the token replaced wherever it occurs."""
        return scrub(redact(text), (self._token or "",))

    def _clean(self, stderr: bytes) -> str:
        """git's complaint on one line, without credentials."""
        return self._scrub(stderr_text(stderr))

    def _remote_error(self, what: str, stderr: bytes) -> ForgeError:
        """The error for a failed talk with the remote, by what git said."""
        text = self._clean(stderr)
        lower = text.lower()
        message = f"{what} {self.url} failed: {text}"
        if any(marker in lower for marker in _AUTH_MARKERS):
            tip = "Check the credentials for the remote"
            tip += f" (the token in ${self._token_env})." if self._token_env else "."
            return ForgeAuthError(message, tip=tip)
        if any(marker in lower for marker in _UNAVAILABLE_MARKERS):
            return ForgeUnavailable(message, tip="The remote could not be reached; retried later.")
        return PushError(message, tip="Run `git ls-remote` on the remote to see the full error.")

    @contextmanager
    def _session(self) -> Iterator[_Session]:
        """A temporary bare repository borrowing the clone's objects, with the askpass script."""
        with tempfile.TemporaryDirectory(prefix="govern-push-") as tmp:
            env = dict(self._env)
            if self._token and urlsplit(self._url).scheme in ("http", "https"):
                script = Path(tmp) / "askpass"
                script.write_text(_ASKPASS)
                script.chmod(stat.S_IRWXU)
                env.update({"GIT_ASKPASS": str(script), _TOKEN_VAR: self._token})
                env[_USER_VAR] = _username(self._url)
            repo = Path(tmp) / "repo.git"
            proc = self._git(Path(tmp), env, "init", "-q", "--bare", "--template=", str(repo))
            if proc.returncode != 0:
                raise PushError(f"cannot create a temporary repository: {self._clean(proc.stderr)}")
            objects = self._objects()
            if objects is not None:
                info = repo / "objects" / "info"
                info.mkdir(parents=True, exist_ok=True)
                (info / "alternates").write_text(f"{objects}\n")
            yield _Session(repo, env)

    def _objects(self) -> Path | None:
        """The clone's object directory (to borrow from), or None if git cannot say."""
        proc = self._git(self._root, self._env, "rev-parse", "--git-common-dir")
        if proc.returncode != 0:
            return None
        common = Path(os.fsdecode(proc.stdout.strip()))
        objects = (common if common.is_absolute() else self._root / common) / "objects"
        return objects.resolve() if objects.is_dir() else None

    def _ls_remote(self, session: _Session, *args: str) -> list[tuple[str, str]]:
        """``git ls-remote`` lines as (object, name) pairs."""
        proc = self._git(session.repo, session.env, "ls-remote", *args, self._url)
        if proc.returncode != 0:
            raise self._remote_error("reading", proc.stderr)
        pairs = []
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            obj, _, name = line.partition("\t")
            pairs.append((obj, name))
        return pairs

    def _fetch(self, session: _Session, branches: Sequence[str]) -> dict[str, str]:
        """Fetch branches of the remote into the session: branch -> tip (missing ones left out)."""
        heads = {name: obj for obj, name in self._ls_remote(session, "--heads")}
        present = [b for b in branches if f"refs/heads/{b}" in heads]
        if present:
            specs = [f"+refs/heads/{b}:refs/govern/{b}" for b in present]
            args = ("fetch", "-q", "--no-tags", "--no-write-fetch-head", self._url, *specs)
            proc = self._git(session.repo, session.env, *args)
            if proc.returncode != 0:
                raise self._remote_error("fetching from", proc.stderr)
        tips = {}
        for branch in present:
            tips[branch] = self._local(session, "rev-parse", "--verify", f"refs/govern/{branch}")
        return tips

    def _local(self, session: _Session, *args: str, stdin: bytes | None = None) -> str:
        """Run git in the session's repository; its stdout, stripped (PushError on failure)."""
        proc = self._git(session.repo, session.env, *args, stdin=stdin)
        if proc.returncode != 0:
            raise PushError(f"git {args[0]} failed: {self._clean(proc.stderr)}")
        return proc.stdout.decode("utf-8", "surrogateescape").strip()

    # -- questions -----------------------------------------------------------------------------

    def default_branch(self) -> str:
        """The branch the remote's HEAD names (``git ls-remote --symref <url> HEAD``); when
        it names none, the clone's default branch (:mod:`govern.git.branches`) if the remote
        has it; else a PushError whose tip says how to set ``base``."""
        with self._session() as session:
            proc = self._git(session.repo, session.env, "ls-remote", "--symref", self._url, "HEAD")
            if proc.returncode != 0:
                raise self._remote_error("reading", proc.stderr)
            for line in proc.stdout.decode("utf-8", "replace").splitlines():
                target, _, name = line.partition("\t")
                if name == "HEAD" and target.startswith("ref: refs/heads/"):
                    return target.removeprefix("ref: refs/heads/")
            heads = {name for _, name in self._ls_remote(session, "--heads")}
        local = local_default_branches(
            self._root, self._remote, env=self._env, executable=self._executable
        )
        for branch in local:
            if f"refs/heads/{branch}" in heads:
                return branch
        tried = f" (tried {', '.join(local)}: not on the remote)" if local else ""
        raise PushError(
            f"the remote {self.url} does not name a default branch, and this clone has no "
            f"default branch the remote has{tried}",
            tip=BASE_TIP,
        )

    def branch_head(self, branch: str) -> str | None:
        """The tip of a branch on the remote, or None when there is no such branch."""
        _check_branch(branch)
        with self._session() as session:
            for obj, name in self._ls_remote(session, "--heads"):
                if name == f"refs/heads/{branch}":
                    return obj
        return None

    def read(self, path: str, *, base: str) -> bytes | None:
        """The file at path on the remote's base branch; None when it has no such file."""
        _check_branch(base)
        relative = _check_path(path)
        with self._session() as session:
            tip = self._fetch(session, [base]).get(base)
            if tip is None:
                raise _no_base(base, self.url)
            entry = _tree_entry(self._local(session, "ls-tree", "-z", tip, "--", relative))
            if entry is None or entry[1] != "blob":
                return None
            proc = self._git(session.repo, session.env, "cat-file", "blob", entry[2])
            if proc.returncode != 0:
                raise PushError(f"git cat-file failed: {self._clean(proc.stderr)}")
            return proc.stdout

    def export(self, base: str, into: Path) -> None:
        """Write the files of the remote's base branch into the directory ``into`` (a copy
        of the repository to run a lock tool in; no ``.git``). Links and special files are
        not written: only regular files and directories inside ``into``."""
        _check_branch(base)
        with self._session() as session:
            tip = self._fetch(session, [base]).get(base)
            if tip is None:
                raise _no_base(base, self.url)
            proc = self._git(session.repo, session.env, "archive", "--format=tar", tip)
            if proc.returncode != 0:
                raise PushError(f"git archive failed: {self._clean(proc.stderr)}")
        unpack_tree(proc.stdout, into)

    # -- the push ------------------------------------------------------------------------------

    def push(
        self,
        *,
        branch: str,
        base: str,
        path: str,
        content: bytes,
        message: str,
        key: str,
        ours: Collection[str] = (),
        also: Mapping[str, bytes] | None = None,
    ) -> Pushed:
        """Make branch hold one commit on the remote's base tip that sets path to content
        (and each path of ``also`` to its content: the locks regenerated with it).

        The message is the commit's (the evidence); a ``Govern-Proposal: <key>`` trailer is
        added. When the branch already is that commit's equal (parent = base tip, same
        tree), nothing is pushed (``UNCHANGED``). A branch whose tip is neither in ``ours``
        (the commits govern recorded pushing to it) nor govern's own commit of this change
        is someone else's: nothing is pushed (``FOREIGN``). Otherwise the branch is created
        or replaced, leased on the tip seen (a branch moved meanwhile is refused).
        """
        _check_branch(branch)
        _check_branch(base)
        if branch == base:
            raise PushError(f"the proposal's branch cannot be the base branch {base!r}")
        files = {_check_path(path): content}
        files.update({_check_path(other): data for other, data in (also or {}).items()})
        relative = _check_path(path)
        if not re.fullmatch(r"[A-Za-z0-9._:/@+-]+", key):
            raise PushError(f"a proposal key is a plain word, not {key!r}")
        with self._session() as session:
            tips = self._fetch(session, [base, branch])
            base_tip = tips.get(base)
            if base_tip is None:
                raise _no_base(base, self.url)
            tree = self._tree(session, base_tip, files)
            if tree == self._local(session, "rev-parse", f"{base_tip}^{{tree}}"):
                raise PushError(
                    f"{relative} on {base} already has that content: there is nothing to propose"
                )
            old = tips.get(branch)
            if old is not None:
                parents = self._local(session, "rev-list", "--parents", "-n", "1", old).split()[1:]
                old_tree = self._local(session, "rev-parse", f"{old}^{{tree}}")
                if parents == [base_tip] and old_tree == tree:
                    return Pushed(old, branch, self.url, PushOutcome.UNCHANGED)
                if old not in ours and not self._own(session, old, files, key):
                    # A reviewer's fix-up, a person's branch of the same name: never lost.
                    return Pushed(old, branch, self.url, PushOutcome.FOREIGN)
            sha = self._commit(session, tree, base_tip, message, key)
            self._push(session, sha, branch, old)
            return Pushed(sha, branch, self.url, PushOutcome.PUSHED)

    def _own(self, session: _Session, tip: str, files: Mapping[str, bytes], key: str) -> bool:
        """Whether tip is govern's own commit of this change: one parent, govern's author
        and trailer, and a tree that is its parent's with the files set (what a push
        leaves when a crash lost its record; a commit a person added or amended is not)."""
        parents = self._local(session, "rev-list", "--parents", "-n", "1", tip).split()[1:]
        if len(parents) != 1:
            return False
        said = self._local(
            session,
            "log",
            "-1",
            f"--format=%an%x00%ae%x00%(trailers:key={TRAILER},valueonly,separator=%x00)",
            tip,
        ).split("\0")
        if said[:2] != list(self._author) or said[2:] != [key]:
            return False
        tree = self._local(session, "rev-parse", f"{tip}^{{tree}}")
        try:
            return tree == self._tree(session, parents[0], files)
        except PushError:  # a path is no file on that parent: not this change
            return False

    def _tree(self, session: _Session, base_tip: str, files: Mapping[str, bytes]) -> str:
        """The tree of base_tip with each path of ``files`` set to its content (a file's
        mode kept)."""
        env = {**session.env, "GIT_INDEX_FILE": str(session.repo.parent / "index")}
        steps: list[tuple[str, ...]] = [("read-tree", base_tip)]
        for path, content in files.items():
            entry = _tree_entry(self._local(session, "ls-tree", "-z", base_tip, "--", path))
            mode = "100644"
            if entry is not None:
                if entry[1] != "blob":
                    raise PushError(f"{path} on the base branch is not a file ({entry[1]})")
                mode = entry[0]
            blob = self._local(
                session, "hash-object", "-w", "--no-filters", "--stdin", stdin=content
            )
            steps.append(("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}"))
        for args in steps:
            proc = self._git(session.repo, env, *args)
            if proc.returncode != 0:
                raise PushError(f"git {args[0]} failed: {self._clean(proc.stderr)}")
        proc = self._git(session.repo, env, "write-tree")
        if proc.returncode != 0:
            raise PushError(f"git write-tree failed: {self._clean(proc.stderr)}")
        return proc.stdout.decode("ascii").strip()

    def _commit(self, session: _Session, tree: str, parent: str, message: str, key: str) -> str:
        """A commit of tree on parent, by the configured author, with the proposal trailer."""
        text = self._local(
            session,
            "interpret-trailers",
            "--trailer",
            f"{TRAILER}: {key}",
            stdin=message.rstrip("\n").encode() + b"\n",
        )
        name, email = self._author
        identity = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
        env = {**session.env, **identity}
        args = ("commit-tree", "--no-gpg-sign", tree, "-p", parent, "-F", "-")
        proc = self._git(session.repo, env, *args, stdin=text.encode() + b"\n")
        if proc.returncode != 0:
            raise PushError(f"git commit-tree failed: {self._clean(proc.stderr)}")
        return proc.stdout.decode("ascii").strip()

    def _push(self, session: _Session, sha: str, branch: str, old: str | None) -> None:
        """Push sha to branch, leased on old (None: the branch must not exist yet)."""
        ref = f"refs/heads/{branch}"
        lease = f"--force-with-lease={ref}:{old or ''}"
        args = ("push", "--porcelain", "--no-verify", lease, self._url, f"{sha}:{ref}")
        proc = self._git(session.repo, session.env, *args)
        if proc.returncode == 0:
            return
        reason = _rejection(proc.stdout.decode("utf-8", "replace"), ref)
        if reason is None:
            raise self._remote_error("pushing to", proc.stderr)
        raise PushError(
            f"pushing {branch} to {self.url} was rejected: {self._scrub(reason)}",
            tip="The branch may be protected, or moved by someone else; see the remote's rules.",
        )


def _rejection(porcelain: str, ref: str) -> str | None:
    """The remote's reason for refusing ref, from ``git push --porcelain`` output."""
    for line in porcelain.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and fields[0] == "!" and fields[1].endswith(f":{ref}"):
            return fields[2].strip() or "rejected"
    return None


def _tree_entry(listing: str) -> tuple[str, str, str] | None:
    """(mode, type, object) from one ``git ls-tree -z`` entry, or None for an empty listing."""
    first = listing.split("\0", 1)[0]
    if not first:
        return None
    meta, _, _ = first.partition("\t")
    mode, kind, obj = meta.split(" ")
    return mode, kind, obj


def _username(url: str) -> str:
    """The user name the askpass script gives: the URL's, or the forge's token user."""
    parts = urlsplit(url)
    if parts.username:
        return parts.username
    host = (parts.hostname or "").lower()
    return "oauth2" if "gitlab" in host else "x-access-token"


def _check_branch(branch: str) -> None:
    """PushError unless branch is a plain branch name (no option, no revision syntax)."""
    if (
        not _REF_RE.fullmatch(branch)
        or branch.startswith(("-", "/"))
        or branch.endswith(("/", ".lock", "."))
        or ".." in branch
        or "//" in branch
    ):
        raise PushError(f"{branch!r} is not a plain branch name")


def _check_path(path: str) -> str:
    """path as a ``/``-separated path relative to the repository top; PushError otherwise."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or path.startswith("/") or "\n" in path or "\0" in path:
        raise PushError(f"{path!r} is not a path inside the repository")
    return "/".join(parts)


def _no_base(base: str, url: str) -> PushError:
    """The error for a base branch the remote does not have."""
    return PushError(
        f"the remote {url} has no branch {base!r}",
        tip="Configure an existing base branch ([propose] base).",
    )
