"""What a verification installs beside the candidate: the versions of the intent's locks,
regenerated for it.

A relaxation changes the intent and regenerates its locks (:mod:`govern.locks.regenerate`);
what the change installs is then the candidate *and the regenerated lock's versions of
everything else*. A verification that installed the candidate with whatever the index
offers today would be evidence about another environment. So before a run starts, the
intent's locks are regenerated for the candidate in a copy of the base branch the proposal
will change (else the checkout's last commit), the intent pinned to ``NAME==V``, and every
other package they then hold becomes a
pin of the run (``Trial.pins``: the constraints file of a local command, the ``pins`` input
of hosted CI). The control and the reproducer runs get the same pins: only the package's
version differs between them and the candidate's run.

When the locks cannot be regenerated, the run goes on without pins and says why
(:attr:`LockPins.refused`); the proposal regenerates them again and is held, with the
tool's own error, if they still cannot be.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from govern.errors import GovernError
from govern.exclusions.ref import ExclusionRef
from govern.locks.regenerate import (
    LockRefused,
    Regenerator,
    locks_of,
    pinned_versions,
    single_pins,
)
from govern.text import line

if TYPE_CHECKING:
    from govern.config import Config
    from govern.index.pipconfig import IndexSettings
    from govern.sources.model import Source

__all__ = [
    "LockPins",
    "PinsFor",
    "lock_pins",
    "other_pins",
    "pinned_intent",
    "pins_digest",
    "pins_for",
]

# Not copied from a checkout that is not a git repository: environments and caches.
_SKIPPED = (".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache")


@dataclass(frozen=True, slots=True)
class LockPins:
    """The locks of an intent regenerated for a candidate, and the versions they hold of
    every other package (``name==version``, sorted); ``refused``: why they could not be
    regenerated (no pins then)."""

    locks: tuple[str, ...]
    pins: tuple[str, ...] = ()
    refused: str | None = None
    # Where the copy came from: the remote's base branch the proposal will change, else the
    # checkout's last commit.
    origin: str = ""

    def detail(self) -> dict[str, Any]:
        """For a run's ``verification-started`` event (``digest``: :func:`pins_digest`)."""
        out: dict[str, Any] = {"locks": list(self.locks), "pins": len(self.pins)}
        if self.origin:
            out["from"] = self.origin
        if self.refused is None:
            out["digest"] = pins_digest(self.pins)
        else:
            out["refused"] = line(self.refused, 500)
        return out


#: ``(root, ref, format, version) -> LockPins | None`` (None: the intent has no lock).
PinsFor = Callable[[Path, ExclusionRef, str, str], "LockPins | None"]


def pinned_intent(
    content: bytes, *, ref: ExclusionRef, fmt: str, version: str, hashes: tuple[str, ...] = ()
) -> bytes | None:
    """The intent ``content`` with the exclusion's line pinned to ``NAME==V``: what a lock
    tool without an upgrade option (Poetry) locks first, and what a verification's locks
    are regenerated from. None when the file cannot be edited so."""
    from govern.edit import relax_source

    try:
        done = relax_source(
            content.decode("utf-8"),
            ref=ref,
            format=fmt,
            specifier=f"=={version}",
            candidate=version,
            evidence=(),
            bad_versions=(),
            hashes=hashes or None,
        )
    except (UnicodeDecodeError, ValueError, GovernError):
        return None
    return done.text.encode()


def lock_pins(
    root: Path,
    *,
    ref: ExclusionRef,
    fmt: str,
    version: str,
    regenerator: Regenerator,
    config: Config | None = None,
) -> LockPins | None:
    """The locks of ``ref``'s intent regenerated for ``version``, and what they then pin;
    None when the intent has no lock (or the checkout is gone). The copy is of the remote's
    base branch (``config.propose``'s: what the proposal will change), else of the checkout's
    last commit. ``config``: the checkout's own (its ``[[locks]]`` commands)."""
    if not root.is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="govern-tree-") as scratch:
        tree = Path(scratch)
        try:
            origin = _copy(root, tree, config)
        except (GovernError, OSError) as exc:
            why = exc.message if isinstance(exc, GovernError) else str(exc)
            return LockPins((), refused=f"the checkout could not be copied: {why}")
        locks = locks_of(tree, ref.source, config)
        if not locks:
            return None
        found = _regenerated(
            tree, locks, ref=ref, fmt=fmt, version=version, regenerator=regenerator, config=config
        )
    return dataclasses.replace(found, origin=origin)


def _regenerated(
    tree: Path,
    locks: Sequence[Source],
    *,
    ref: ExclusionRef,
    fmt: str,
    version: str,
    regenerator: Regenerator,
    config: Config | None,
) -> LockPins:
    """The ``locks`` under ``tree`` regenerated for ``version``, and what they then pin."""
    package = canonicalize_name(ref.package)
    paths = tuple(lock.path for lock in locks)
    try:
        content = (tree / ref.source).read_bytes()
    except OSError:
        return LockPins(paths, refused=f"{ref.source} is not in the copy")
    pinned = pinned_intent(content, ref=ref, fmt=fmt, version=version)
    if pinned is None:
        return LockPins(paths, refused=f"{ref.source} cannot be pinned to {version}")
    try:
        regenerator.regenerate(
            tree,
            intent=ref.source,
            content=pinned,
            pinned=pinned,
            package=package,
            version=version,
            config=config,
            locks=locks,
        )
    except LockRefused as exc:
        return LockPins(paths, refused=exc.message)
    return LockPins(paths, other_pins(tree, locks, package))


def other_pins(tree: Path, locks: Sequence[Source], package: str) -> tuple[str, ...]:
    """What the ``locks`` under ``tree`` pin now of every package but ``package``
    (``name==version``, sorted; the first lock's version where two differ). A package a
    lock holds at two versions (by marker) is left out: a constraints file takes one."""
    pins: dict[str, str] = {}
    for lock in locks:
        for pin in single_pins(pinned_versions(tree, lock), skip=package):
            pins.setdefault(pin.partition("==")[0], pin)
    return tuple(pins[name] for name in sorted(pins))


def pins_digest(pins: Sequence[str]) -> str:
    """A short name for a set of pins: the verification records it, the proposal compares
    its branch's with it."""
    return hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:16]


def _copy(root: Path, into: Path, config: Config | None) -> str:
    """Copy into ``into`` the remote's base branch the proposal would change (``[propose]``
    remote and base), else the checkout's last commit (no remote, offline), else its files
    (not a git repository); where the copy came from."""
    from govern.git.history import Git
    from govern.git.push import Pusher

    if config is not None:
        settings = config.propose
        try:
            pusher = Pusher(root, remote=settings.remote, token_env=settings.token_env)
            base = settings.base or pusher.default_branch()
            pusher.export(base, into)
        except GovernError:
            pass  # the checkout itself, then
        else:
            return f"{base} of {settings.remote}"
    git = Git.discover(root)
    if git is not None and git.head() is not None:
        inside = root.resolve().relative_to(git.top.resolve()).as_posix()
        git.export(into, "HEAD" if inside == "." else f"HEAD:{inside}")
        return "the checkout's last commit"
    # Links are copied as links, never followed (a loop, a folder outside the checkout).
    shutil.copytree(
        root, into, symlinks=True, ignore=shutil.ignore_patterns(*_SKIPPED), dirs_exist_ok=True
    )
    return "the checkout's files"


def pins_for(index: IndexSettings | None) -> PinsFor:
    """:func:`lock_pins` as a verification asks it: the lock tools ask ``index`` (None:
    their own configuration), with each checkout's own configuration (its ``[[locks]]``)."""
    regenerator = Regenerator.for_index(index)

    def pins(root: Path, ref: ExclusionRef, fmt: str, version: str) -> LockPins | None:
        from govern.config import load_config

        try:
            config = load_config(root)
        except GovernError as exc:
            return LockPins(
                (), refused=f"the checkout's configuration cannot be read: {exc.message}"
            )
        return lock_pins(
            root, ref=ref, fmt=fmt, version=version, regenerator=regenerator, config=config
        )

    return pins
