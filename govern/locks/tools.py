"""Lock tools at the version a project asks for, installed by govern into its cache.

A lock written by another uv or Poetry than the project's changes more than the package
(its format, its resolution rules), so a tool beside govern that the project does not accept
is not used: the version the project asks for (uv's ``required-version``, the Poetry of the
lock's header) is installed into ``<cache>/tools/<name>-<hash of the request>`` (a virtual
environment; ``<cache>`` is the user's cache directory, ``GOVERN_TOOLS_DIR`` to choose
another) from the configured index, once, and run from there. Installing is pip's, with
wheels only (no build runs), the index as pip's own variables, nothing else of the caller's
environment but ``PATH`` and the certificates to trust.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

__all__ = ["ToolCache", "default_tools_dir", "tool_environment"]

ENV_VAR = "GOVERN_TOOLS_DIR"
_TRUST = ("SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT", "REQUESTS_CA_BUNDLE")


def tool_environment(
    home: Path, index_url: str | None, extra_index_urls: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment a lock tool (or its install) runs in, built from nothing: ``PATH``, a
    scratch ``HOME``, the certificates to trust, and the index as pip's own variables (None:
    pip's own configuration); no secret of govern's."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    # Which certificates to trust is part of reaching the index (no secret in it).
    env.update({k: os.environ[k] for k in _TRUST if os.environ.get(k)})
    if index_url is not None:
        env["PIP_CONFIG_FILE"] = os.devnull
        env["PIP_INDEX_URL"] = index_url
        if extra_index_urls:
            env["PIP_EXTRA_INDEX_URL"] = " ".join(extra_index_urls)
    return env


def default_tools_dir() -> Path:
    """``$GOVERN_TOOLS_DIR``, else ``tools`` in the user's cache directory for govern."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        return Path(chosen)
    from platformdirs import user_cache_path

    return user_cache_path("govern") / "tools"


@dataclass(frozen=True, slots=True)
class ToolCache:
    """Where lock tools are installed (None: :func:`default_tools_dir`), from which index
    (None: pip's own configuration), within how long."""

    root: Path | None = None
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    timeout: float = 600.0
    # How the tool's error is cleaned before it is shown (the Regenerator's scrubbing).
    clean: Callable[[str], str] = field(default=lambda text: text, repr=False)

    def executable(self, package: str, wanted: SpecifierSet, command: str) -> Path:
        """The ``command`` of ``package`` at a version in ``wanted``, installed here first
        when it is not yet; raises :class:`~govern.locks.regenerate.LockRefused` when it
        cannot be.

        The environment is made where it stays (console scripts name their Python by its
        path), under a lock file, and marked complete only once the command answers
        ``--version``: a failed, interrupted or concurrent install is never run, and the
        next call makes it again."""
        from govern.locks.regenerate import LockRefused

        name = canonicalize_name(package)
        key = hashlib.sha256(f"{name}{wanted}".encode()).hexdigest()[:12]
        home = (self.root or default_tools_dir()) / f"{name}-{key}"
        found = _bin(home, command)
        if (home / _COMPLETE).is_file():
            return found
        try:
            home.parent.mkdir(parents=True, exist_ok=True)
            with _locked(home.parent / f"{home.name}.lock"):
                if (home / _COMPLETE).is_file():  # another process made it meanwhile
                    return found
                shutil.rmtree(home, ignore_errors=True)  # what a failed install left
                said = self._install(home, f"{name}{wanted}")
                if said is None and not _answers(found):
                    said = f"its {command} command does not run"
                if said is not None:
                    shutil.rmtree(home, ignore_errors=True)
                    raise LockRefused(
                        f"{name}{wanted} could not be installed into govern's cache: {said}",
                        tip=f"Install it by hand beside govern, or check the index ({name} "
                        "must be there as a wheel).",
                    )
                (home / _COMPLETE).write_text(f"{name}{wanted}\n", encoding="utf-8")
        except OSError as exc:
            raise LockRefused(
                f"{name}{wanted} could not be installed into govern's cache at {home}: "
                f"{exc.strerror or exc}",
                tip=f"Make {home.parent} writable, or set {ENV_VAR} to a folder that is.",
            ) from None
        return found

    def _install(self, venv: Path, requirement: str) -> str | None:
        """Create ``venv`` and install ``requirement`` into it; None, or what failed."""
        from govern.locks.regenerate import ERROR_CHARS

        pip = [sys.executable, "-m", "pip", "--python", str(_bin(venv, "python"))]
        steps = (
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            [*pip, "install", "--only-binary=:all:", "--no-cache-dir", requirement],
        )
        with tempfile.TemporaryDirectory(prefix="govern-tool-") as scratch:
            env = tool_environment(Path(scratch), self.index_url, self.extra_index_urls)
            env["PIP_NO_INPUT"] = "1"
            for args in steps:
                try:
                    done = subprocess.run(
                        args, env=env, capture_output=True, timeout=self.timeout, check=False
                    )
                except subprocess.TimeoutExpired:
                    return f"not done within {self.timeout:.0f} s"
                except OSError as exc:
                    return exc.strerror or type(exc).__name__
                if done.returncode != 0:
                    text = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
                    return self.clean(text[-ERROR_CHARS:])
        return None


_COMPLETE = ".govern-complete"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created) for the block: one install at a time."""
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _answers(command: Path) -> bool:
    """Whether ``command --version`` runs and exits 0."""
    try:
        done = subprocess.run(
            [str(command), "--version"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _bin(venv: Path, command: str) -> Path:
    folder = "Scripts" if sys.platform == "win32" else "bin"
    return venv / folder / (f"{command}.exe" if sys.platform == "win32" else command)
