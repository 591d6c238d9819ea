"""Read provenance from a local git repository by running the ``git`` command.

Notes: docs/internals.md#git.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path

from govern.git.runner import (
    GitMissing,
    environment,
    failed,
    git_error,
    run,
    toplevel,
    unpack_tree,
)

__all__ = ["Commit", "Git", "Hunk", "Patch", "Revision", "pull_request_number"]


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit, as far as provenance needs it: who, when, what and which pull request."""

    sha: str
    """The full object name (40 hex digits; 64 in a SHA-256 repository)."""
    date: datetime
    """The committer date (when the change landed), timezone-aware."""
    author: str
    """The author's name."""
    subject: str
    """The first line of the commit message."""
    pull_request: int | None
    """The pull/merge request the commit came from (:func:`pull_request_number`)."""


@dataclass(frozen=True, slots=True)
class Revision:
    """A commit that changed one file, with the file's path at that commit."""

    commit: Commit
    path: str
    """The file's path relative to the repository top at this commit (renames followed)."""
    deleted: bool
    """The commit deleted the file (``path`` is then the path it was deleted from)."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``-U0`` hunk: ``count`` old lines from ``start`` replaced by ``lines``."""

    start: int
    """Where the old lines start (0-based; with no old lines, where the new ones go)."""
    count: int
    """How many old lines the hunk removes."""
    lines: tuple[bytes, ...]
    """The lines it adds, each with its newline (the file's last line may lack one)."""


@dataclass(frozen=True, slots=True)
class Patch:
    """How one commit changed one file, as ``git log -p`` shows it."""

    hunks: tuple[Hunk, ...]
    blob: str | None
    """The full object name of the file after the commit (None when git showed none)."""
    usable: bool = True
    """False when the change cannot be applied as text (a binary file, an odd diff)."""

    def apply(self, old: Sequence[bytes]) -> list[bytes] | None:
        """The file's lines after the commit, or None when the hunks do not give ``blob``.

        The result is checked against the object name git printed, so a diff that does
        not apply exactly (a filter, an unusual header) is noticed and never guessed at.
        """
        if not self.usable:
            return None
        out: list[bytes] = []
        position = 0
        for hunk in self.hunks:
            if hunk.start < position or hunk.start + hunk.count > len(old):
                return None
            out.extend(old[position : hunk.start])
            out.extend(hunk.lines)
            position = hunk.start + hunk.count
        out.extend(old[position:])
        gone = self.blob is not None and not self.blob.strip("0")  # all zeros: deleted
        if self.blob is not None and not gone and blob_name(out, len(self.blob)) != self.blob:
            return None
        if gone and out:
            return None
        return out


def blob_name(lines: Sequence[bytes], width: int = 40) -> str:
    """The object name git gives a blob of these lines (SHA-1, or SHA-256 for 64 digits)."""
    data = b"".join(lines)
    digest = hashlib.sha256() if width == 64 else hashlib.sha1()  # noqa: S324 (git's name)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


# -- pull request numbers ----------------------------------------------------------------------

# Subject forms. GitHub squash merges end the subject with "(#N)" (a cherry-pick of one may
# carry two: the last is the newest PR); GitHub merge commits, Bitbucket and Azure DevOps
# name the PR at the start of the subject.
_SQUASH_RE = re.compile(r"\(#(\d+)\)\s*$")
_GITHUB_MERGE_RE = re.compile(r"^Merge pull request #(\d+) from \S")
_BITBUCKET_MERGE_RE = re.compile(r"^Merged in \S+ \(pull request #(\d+)\)")
_AZURE_MERGE_RE = re.compile(r"^Merged PR (\d+):")
# Body form: GitLab merge commits end with "See merge request group/project!N" (older
# GitLab wrote "See merge request !N").
_GITLAB_MERGE_RE = re.compile(r"^See merge request (?:[\w.\-/]+)?!(\d+)\s*$", re.MULTILINE)


def pull_request_number(message: str) -> int | None:
    """The PR number a commit message carries, or None.

    Recognised: a GitHub squash-merge subject ending in ``(#44284)``, a GitHub merge commit
    ``Merge pull request #N from owner/branch``, a GitLab ``See merge request group/project!N``
    line, Bitbucket ``Merged in branch (pull request #N)`` and Azure DevOps ``Merged PR N:``.
    Only the subject's trailing ``(#N)`` counts for the squash form: a ``#123`` in the body
    usually refers to an issue, not to the PR that made the commit.
    """
    subject = _subject(message)
    for pattern in (_GITHUB_MERGE_RE, _BITBUCKET_MERGE_RE, _AZURE_MERGE_RE, _SQUASH_RE):
        match = pattern.search(subject)
        if match:
            return int(match[1])
    match = _GITLAB_MERGE_RE.search(message)
    return int(match[1]) if match else None


def _subject(message: str) -> str:
    """The first non-blank line of a commit message, without surrounding whitespace."""
    for line in message.splitlines():
        if line.strip():
            return line.strip()
    return ""


# -- parsing ------------------------------------------------------------------------------------

_FS = b"\x1f"


def _log_format(nonce: str) -> tuple[str, bytes, bytes]:
    """A ``git log --format`` whose records cannot be confused with commit text.

    Each record is ``RS nonce S`` sha, committer date, author, raw message ``RS nonce E``,
    fields separated by US (0x1f). The random nonce makes the markers unforgeable even by a
    message that contains control characters. Returns the format and both markers.
    """
    start, end = f"\x1e{nonce}S".encode(), f"\x1e{nonce}E".encode()
    return f"%x1e{nonce}S%H%x1f%cI%x1f%an%x1f%B%x1e{nonce}E", start, end


def _parse_commit(header: bytes) -> Commit:
    """A Commit from one record's ``sha US date US author US message`` bytes."""
    sha, when, author, raw_message = header.split(_FS, 3)
    message = raw_message.decode("utf-8", "replace")
    return Commit(
        sha=sha.decode("ascii"),
        date=datetime.fromisoformat(when.decode("ascii")),
        author=author.decode("utf-8", "replace"),
        subject=_subject(message),
        pull_request=pull_request_number(message),
    )


def _records(output: bytes, start: bytes, end: bytes) -> list[tuple[Commit, bytes]]:
    """Each commit in ``git log`` output with the bytes after it (its ``--name-status`` part)."""
    records = []
    for chunk in output.split(start)[1:]:
        header, _, rest = chunk.partition(end)
        records.append((_parse_commit(header), rest))
    return records


def _status_entries(raw: bytes) -> list[tuple[str, str, str]]:
    """``(status, old path, new path)`` from ``--name-status -z`` output (old == new unless R/C)."""
    tokens = raw.lstrip(b"\0\n").split(b"\0")
    entries = []
    i = 0
    while i < len(tokens) and tokens[i]:
        status = tokens[i].decode("ascii", "replace")
        if status[:1] in ("R", "C") and i + 2 < len(tokens):
            old, new = os.fsdecode(tokens[i + 1]), os.fsdecode(tokens[i + 2])
            i += 3
        elif i + 1 < len(tokens):
            old = new = os.fsdecode(tokens[i + 1])
            i += 2
        else:
            break
        entries.append((status, old, new))
    return entries


# One file's history on the current branch, renames followed (see Git.file_history).
_FOLLOW = ("log", "--follow", "--first-parent", "-m", "-M")
# Diffs that can be applied and checked, whatever the user's diff configuration says.
_PATCH = (
    "-p",
    "-U0",
    "--full-index",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
_HUNK_RE = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX_RE = re.compile(rb"index [0-9a-f]+\.\.([0-9a-f]{40}(?:[0-9a-f]{24})?)(?: \d+)?")


def _patch(raw: bytes) -> Patch:
    """A Patch from the ``-U0 --full-index`` diff of one file after a log record."""
    lines = raw.split(b"\n")
    hunks: list[Hunk] = []
    blob: str | None = None
    usable = True
    files = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(b"diff --git "):
            files += 1
        elif line.startswith((b"Binary files ", b"GIT binary patch")):
            usable = False
        elif (index := _INDEX_RE.fullmatch(line)) is not None:
            blob = index[1].decode("ascii")
        elif (header := _HUNK_RE.match(line)) is not None:
            old_start, old_count = int(header[1]), int(header[2] or b"1")
            new_count = int(header[4] or b"1")
            added: list[bytes] = []
            removed = 0
            # Counted, not matched: a removed line "-- x" shows as "--- x".
            while (removed < old_count or len(added) < new_count) and i < len(lines):
                body = lines[i]
                i += 1
                if body.startswith(b"-") and removed < old_count:
                    removed += 1
                elif body.startswith(b"+") and len(added) < new_count:
                    added.append(body[1:] + b"\n")
                elif body.startswith(b"\\"):
                    continue
                else:
                    usable = False
                    break
                if i < len(lines) and lines[i].startswith(b"\\") and body.startswith(b"+"):
                    added[-1] = added[-1][:-1]  # "\ No newline at end of file"
                    i += 1
            if removed != old_count or len(added) != new_count:
                usable = False
            start = old_start - 1 if old_count else old_start
            hunks.append(Hunk(start, old_count, tuple(added)))
    if files > 1:
        usable = False
    return Patch(tuple(hunks), blob, usable)


_BATCH_HEADER_RE = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})? ([a-z]+) (\d+)")
_BLAME_HEADER_RE = re.compile(rb"([0-9a-f]{40}(?:[0-9a-f]{24})?) \d+ (\d+)(?: \d+)?")


# -- the repository ----------------------------------------------------------------------------


class Git:
    """One git working tree, read with the ``git`` command.

    Paths given to the methods are relative to :attr:`top` (absolute paths inside the
    working tree are accepted too). Creating a Git checks that root is inside a working
    tree, so a wrong directory fails early rather than at the first question.
    """

    __slots__ = ("_env", "_executable", "_timeout", "_top")

    def __init__(self, root: Path, *, executable: str = "git", timeout: float = 120.0) -> None:
        """Open the working tree containing root; GitError if there is none or git is missing."""
        self._executable = executable
        self._timeout = timeout
        self._env = environment()
        start = Path(root)
        if not start.is_dir():
            raise git_error(
                f"cannot read git history: {start} is not a directory",
                tip="Pass the directory of a git checkout.",
            )
        top = toplevel(start, executable, timeout, self._env)
        if top is None:
            raise git_error(
                f"{start} is not inside a git repository",
                tip="Run govern in a git checkout, or pass the path of one.",
            )
        self._top = top

    @classmethod
    def discover(cls, path: Path, *, executable: str = "git", timeout: float = 120.0) -> Git | None:
        """The repository containing path (a file or directory); None if none or git is missing.

        A path that does not exist is looked up from its nearest existing parent. Other
        failures (a timeout, a repository git refuses to read) still raise GitError.
        """
        start = Path(path).absolute()
        while not start.is_dir() and start != start.parent:
            start = start.parent
        env = environment()
        try:
            top = toplevel(start, executable, timeout, env)
        except GitMissing:
            return None
        if top is None:
            return None
        git = cls.__new__(cls)
        git._executable, git._timeout, git._env, git._top = executable, timeout, env, top
        return git

    @property
    def top(self) -> Path:
        """The top directory of the working tree (as git reports it, symlinks resolved)."""
        return self._top

    def __repr__(self) -> str:
        """``Git('/path/to/top')``."""
        return f"Git({str(self._top)!r})"

    def _git(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` at the top of the working tree."""
        return run(
            self._executable,
            args,
            cwd=self._top,
            env=self._env,
            timeout=self._timeout,
            stdin=stdin,
        )

    def _path(self, path: str) -> str:
        """path relative to top, ``/``-separated; GitError if it leaves the working tree."""
        candidate = Path(path)
        if candidate.is_absolute():
            for base in (candidate, candidate.resolve()):
                try:
                    candidate = base.relative_to(self._top)
                    break
                except ValueError:
                    continue
            else:
                raise git_error(
                    f"{path} is outside the git repository at {self._top}",
                    tip="Pass a path inside the repository.",
                )
        relative = candidate.as_posix()
        if relative in ("", ".") or ".." in candidate.parts:
            raise git_error(
                f"{path!r} does not name a file in the git repository at {self._top}",
                tip="Pass the path of a file, relative to the top of the repository.",
            )
        return relative

    def head(self) -> str | None:
        """The full sha HEAD points to; None in a repository without commits."""
        args = ("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        proc = self._git(*args)
        if proc.returncode == 0:
            return proc.stdout.decode("ascii").strip()
        if proc.returncode == 1 and not proc.stderr.strip():
            return None  # --verify --quiet: HEAD does not resolve (an unborn branch)
        raise failed(args, proc, self._top)

    def export(self, into: Path, ref: str = "HEAD") -> None:
        """Write the files of ``ref`` (a tree-ish; default: HEAD, the checkout's last commit)
        into the directory ``into``, without ``.git``: a copy to run a lock tool in."""
        args = ("archive", "--format=tar", ref)
        proc = self._git(*args)
        if proc.returncode != 0:
            raise failed(args, proc, self._top)
        unpack_tree(proc.stdout, into)

    def file_history(self, path: str, *, since: date | None = None) -> list[Revision]:
        """The commits that changed one file, oldest first, following renames.

        This is the history of the file *on the current branch*: ``git log --follow
        --first-parent -m``. A change made on a branch and merged with a merge commit shows
        up once, as the merge commit (dated when it landed, with the merge's PR number, and
        compared against the first parent), not as the branch's own commits, which were
        dated when they were written and may have been rebased or dropped since. Plain
        ``git log --follow`` would list the branch commits and hide the merge. Repositories
        that squash-merge or rebase have no merges, and both views agree.

        since (a date) keeps the commits whose committer date is on or after that day,
        taken as midnight UTC. A path that git does not know gives an empty list.
        """
        relative = self._path(path)
        fmt, start, end = _log_format(secrets.token_hex(8))
        args = [
            *_FOLLOW,
            "--name-status",
            "-z",
            "--no-color",
            f"--format={fmt}",
        ]
        cutoff = None
        if since is not None:
            cutoff = datetime.combine(since, time(), tzinfo=UTC)
            args.append(f"--since={since.isoformat()} 00:00:00 +0000")
        args += ["--", relative]
        proc = self._git(*args)
        if proc.returncode != 0:
            if self.head() is None:
                return []  # no commits yet: nothing has a history
            raise failed(args, proc, self._top)

        revisions: list[Revision] = []
        current = relative  # the file's path at the commit being read (newest first)
        for commit, raw_status in _records(proc.stdout, start, end):
            entries = _status_entries(raw_status)
            entry = next((e for e in entries if e[2] == current), entries[0] if entries else None)
            if entry is None:
                revisions.append(Revision(commit, current, deleted=False))
                continue
            status, old, new = entry
            revisions.append(Revision(commit, new, deleted=status.startswith("D")))
            current = old
        revisions.reverse()
        if cutoff is not None:
            revisions = [r for r in revisions if r.commit.date >= cutoff]
        return revisions

    def file_patches(self, path: str, *, after: str | None = None) -> dict[str, Patch]:
        """How each commit that changed one file changed it: sha -> Patch, in one ``git log -p``.

        The same walk as :meth:`file_history` (``--follow --first-parent -m``), with
        ``-U0`` hunks and full object names so that each result can be checked
        (:meth:`Patch.apply`); after (a sha) leaves out that commit and its ancestors.
        """
        relative = self._path(path)
        fmt, start, end = _log_format(secrets.token_hex(8))
        args = [*_FOLLOW, *_PATCH, f"--format={fmt}"]
        if after is not None:
            args.append(f"{after}..HEAD")
        args += ["--", relative]
        proc = self._git(*args)
        if proc.returncode != 0:
            if self.head() is None:
                return {}
            raise failed(args, proc, self._top)
        return {commit.sha: _patch(rest) for commit, rest in _records(proc.stdout, start, end)}

    def read_blobs(self, revisions: Sequence[tuple[str, str]]) -> list[bytes | None]:
        """The contents of each ``(sha, path)`` pair, in order; None where there is no such file.

        One ``git cat-file --batch`` process answers every pair. The bytes are the blob as
        stored (no line-ending or filter conversion). A path that names a directory or a
        submodule at that commit, an unknown sha, or a path containing a newline (which
        the batch protocol cannot carry) gives None.
        """
        requests: list[bytes] = []
        for sha, path in revisions:
            name = sha.encode("utf-8", "surrogateescape") + b":" + os.fsencode(path)
            requests.append(name if b"\n" not in name else b"")
        sent = [request for request in requests if request]
        if not sent:
            return [None] * len(requests)
        args = ("cat-file", "--batch")
        proc = self._git(*args, stdin=b"".join(request + b"\n" for request in sent))
        if proc.returncode != 0:
            raise failed(args, proc, self._top)

        out = proc.stdout
        answers: list[bytes | None] = []
        position = 0
        for _ in sent:
            newline = out.find(b"\n", position)
            if newline < 0:
                raise git_error(
                    f"git cat-file --batch ended early in {self._top}",
                    tip="Run `git fsck` to check the repository.",
                )
            header = _BATCH_HEADER_RE.fullmatch(out, position, newline)
            position = newline + 1
            if header is None:  # "<name> missing" or "<name> ambiguous"
                answers.append(None)
                continue
            size = int(header[2])
            body = out[position : position + size]
            position += size + 1  # the contents are followed by a newline
            answers.append(body if header[1] == b"blob" else None)
        replies = iter(answers)
        return [next(replies) if request else None for request in requests]

    def blame(self, path: str) -> dict[int, Commit]:
        """Line number (1-based, in the working-tree file) -> the commit that last changed it.

        One ``git blame --porcelain`` call, then one ``git log --no-walk`` for the commits it
        names (porcelain output lacks the full message the PR number needs). Lines not
        committed yet are absent. A path git does not track, or one missing from the
        working tree, gives ``{}``.
        """
        relative = self._path(path)
        args = ("blame", "--porcelain", "--", relative)
        proc = self._git(*args)
        if proc.returncode != 0:
            unknown = (b"no such path", b"Cannot lstat", b"no such ref: HEAD")
            if any(marker in proc.stderr for marker in unknown):
                return {}
            raise failed(args, proc, self._top)

        line_sha: dict[int, str] = {}
        expect_header = True
        for line in proc.stdout.split(b"\n"):
            if expect_header:
                header = _BLAME_HEADER_RE.fullmatch(line)
                if header is not None:
                    line_sha[int(header[2])] = header[1].decode("ascii")
                    expect_header = False
            elif line.startswith(b"\t"):
                expect_header = True  # the line's content ends each entry
        commits = self._commits({sha for sha in line_sha.values() if sha.strip("0")})
        return {number: commits[sha] for number, sha in line_sha.items() if sha in commits}

    def _commits(self, shas: set[str]) -> dict[str, Commit]:
        """The commits with the given full shas, read by one ``git log --no-walk``."""
        if not shas:
            return {}
        fmt, start, end = _log_format(secrets.token_hex(8))
        args = ("log", "--no-walk=unsorted", "--stdin", "--no-color", f"--format={fmt}")
        proc = self._git(*args, stdin="".join(f"{sha}\n" for sha in sorted(shas)).encode())
        if proc.returncode != 0:
            raise failed(args, proc, self._top)
        return {commit.sha: commit for commit, _ in _records(proc.stdout, start, end)}
