"""Which package index to watch, resolved the way pip resolves it.

Notes: docs/internals.md#index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

from govern.errors import ConfigError, PackageIndexError
from govern.redact import redact

# pip's pattern for ${VAR} in requirement files.
_ENV_VAR = re.compile(r"\$\{([A-Z0-9_]+)\}")
_SETUP_TIP = (
    "pass --index-url URL, set index-url in [tool.govern], or export PIP_INDEX_URL "
    "(https://host/simple/)"
)
PIP_DEFAULT = "pip's default"  # IndexSettings.source of the index pip asks unconfigured
# What the installed pip calls its default index (pip._internal.models.index.PyPI).
_ASK_PIP = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"
_ASK_TIMEOUT = 20.0  # seconds for another interpreter to import pip and answer


class IndexNotConfigured(PackageIndexError):
    """No index URL anywhere: govern will not guess one."""


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """The indexes to read, and where the main one was configured (for messages)."""

    index_url: str
    extra_index_urls: tuple[str, ...] = ()
    # canonical project name -> the only index that project is read from
    per_package: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""  # "--index-url", "PIP_INDEX_URL", "/etc/pip.conf [global]", ...
    # Origins (``https://files.example.org``) an index may redirect to, besides its own.
    trusted_redirects: tuple[str, ...] = ()

    def indexes_for(self, name: str) -> tuple[str, ...]:
        """The indexes that may serve a project, in the order they are asked."""
        mapped = self.per_package.get(canonicalize_name(name))
        if mapped is not None:
            return (mapped,)
        return (self.index_url, *self.extra_index_urls)

    @property
    def pip_default(self) -> bool:
        """Whether nothing configured the main index: it is the one pip asks by default."""
        return self.source == PIP_DEFAULT


def pip_default_index() -> str | None:
    """The index the installed pip asks when nothing is configured, or None without a pip.

    The pip of this interpreter first (pip's own ``PyPI.simple_url``, its one source of
    the default); else the interpreter of the ``pip`` on ``PATH`` (its ``#!`` line), asked
    in a child process. Nothing is written down here: a pip whose default moves moves
    govern's with it.
    """
    try:
        from pip._internal.models.index import PyPI
    except Exception:  # no pip here, or one whose internals moved
        return _ask_pip_on_path()
    url = getattr(PyPI, "simple_url", None)
    return url if isinstance(url, str) and url else _ask_pip_on_path()


def _ask_pip_on_path() -> str | None:
    """:func:`pip_default_index` from another interpreter: the one that runs the ``pip`` on
    ``PATH`` (its ``#!`` line), else ``python3`` or ``python`` on ``PATH`` (pyenv's and
    asdf's ``pip`` are shell scripts that run those)."""
    here = os.path.realpath(sys.executable)
    for interpreter in dict.fromkeys(_interpreters()):  # each once, in order
        if os.path.realpath(interpreter) == here:
            continue  # this interpreter has no pip (asked above)
        try:
            done = subprocess.run(  # a fixed program, no shell, no user text
                [interpreter, "-I", "-c", _ASK_PIP],
                capture_output=True,
                text=True,
                timeout=_ASK_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        answer = done.stdout.strip()
        if done.returncode == 0 and answer.startswith(("https://", "http://")):
            return answer
    return None


def _interpreters() -> list[str]:
    """The interpreters that may hold the pip a user runs here, most likely first."""
    found: list[str] = []
    pip = shutil.which("pip3") or shutil.which("pip")
    if pip is not None:
        try:
            with open(pip, "rb") as script:
                first = script.readline(4096)
        except OSError:
            first = b""
        words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
        if len(words) >= 2 and os.path.basename(words[0]) == "env":
            words = [shutil.which(words[1]) or ""]
        if words and os.path.isabs(words[0]) and "python" in os.path.basename(words[0]):
            found.append(words[0])
    found.extend(p for p in (shutil.which("python3"), shutil.which("python")) if p)
    return found


def expand_env(value: str, environ: Mapping[str, str], *, what: str) -> str:
    """``${VAR}`` replaced from environ; an unset variable raises a ConfigError naming it."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise ConfigError(
                f"{what} refers to ${{{name}}}, which is not set",
                tip=f"export {name}, or write the value into the URL",
            )
        return environ[name]

    return _ENV_VAR.sub(substitute, value)


def _check_url(url: str, *, what: str) -> str:
    """A usable http(s) index URL, or a ConfigError that shows it redacted."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{what} {redact(url)!r} is not an http(s) URL",
            tip="an index URL looks like https://host/simple/",
        )
    return url


def pip_config_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """pip's configuration files on Unix, lowest precedence first (existing or not)."""
    env = os.environ if environ is None else environ
    env_file = env.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    files: list[Path] = []
    config_dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files.extend(Path(d) / "pip" / "pip.conf" for d in config_dirs.split(os.pathsep) if d)
    files.append(Path("/etc/pip.conf"))
    # As pip does: a PIP_CONFIG_FILE that exists replaces the user's own files.
    if not (env_file and Path(env_file).exists()):
        config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        files.extend([home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"])
    if env.get("VIRTUAL_ENV"):
        files.append(Path(env["VIRTUAL_ENV"]) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


@dataclass(frozen=True, slots=True)
class _Value:
    text: str
    source: str


def _read_pip_files(files: Sequence[Path], command: str) -> dict[str, _Value]:
    """The merged ``index-url`` / ``extra-index-url`` of pip's files, per pip's rules."""
    sections: dict[str, dict[str, _Value]] = {"global": {}, command: {}}
    for path in files:
        if not path.is_file():
            continue
        import configparser  # here: most machines have no pip configuration file

        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: not a valid pip configuration file ({type(exc).__name__})",
                tip="fix the file, or set PIP_CONFIG_FILE=/dev/null to ignore pip's files",
            ) from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
        for section, values in sections.items():
            if not parser.has_section(section):
                continue
            for key, text in parser.items(section):
                name = key.lower().replace("_", "-").removeprefix("--")
                if name in ("index-url", "extra-index-url", "no-index") and text.strip():
                    values[name] = _Value(text.strip(), f"{path} [{section}]")
    merged = dict(sections["global"])
    merged.update(sections[command])
    return merged


def _true(value: str) -> bool:
    """A pip boolean setting that is on (pip's strtobool: 1, true, yes, on, y, t)."""
    return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")


def resolve_indexes(
    *,
    cli_index_url: str | None = None,
    configured_index_url: str | None = None,
    configured_extra: Sequence[str] = (),
    per_package: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    config_files: Sequence[Path] | None = None,
    command: str = "install",
    pip_default: Callable[[], str | None] | None = None,
    trusted_redirects: Sequence[str] = (),
) -> IndexSettings:
    """The indexes govern reads, from the highest level that configures each option.

    ``configured_*`` and ``per_package`` come from govern's configuration; ``environ``
    defaults to the process environment and ``config_files`` to :func:`pip_config_files`
    (tests pass explicit files). ``command`` is the pip section that overrides
    ``[global]``. When no level names an index, ``pip_default`` (e.g.
    :func:`pip_default_index`) is asked for pip's own default (source :data:`PIP_DEFAULT`),
    unless pip is told to ask none (``PIP_NO_INDEX``, ``no-index`` in its files);
    raises :class:`IndexNotConfigured` when there is none, and ConfigError for an
    unusable URL or an unset ``${VAR}``.

    Given ``--index-url``, govern asks that index (and extras from its own configuration),
    not pip's extra indexes. A ``file:`` extra index from pip's settings (a local
    directory pip installs from) is left out: it is no Simple API to poll.
    """
    env = os.environ if environ is None else environ
    files = pip_config_files(env) if config_files is None else config_files
    pip_files = _read_pip_files(files, command)

    index: _Value | None = None
    for candidate, source in (
        (cli_index_url, "--index-url"),
        (configured_index_url, "[tool.govern] index-url"),
        (env.get("PIP_INDEX_URL"), "PIP_INDEX_URL"),
    ):
        if candidate and candidate.strip():
            index = _Value(candidate.strip(), source)
            break
    else:
        index = pip_files.get("index-url")
    no_index = env.get("PIP_NO_INDEX") or (
        pip_files["no-index"].text if "no-index" in pip_files else ""
    )
    if index is None and pip_default is not None and not _true(no_index):
        default = pip_default()
        index = _Value(default, PIP_DEFAULT) if default else None
    if index is None:
        raise IndexNotConfigured("no package index is configured", tip=_SETUP_TIP)

    extra: list[str] = []
    extra_source = ""
    if any(url.strip() for url in configured_extra):
        extra = [url.strip() for url in configured_extra if url.strip()]
        extra_source = "[tool.govern] extra-index-url"
    elif cli_index_url and cli_index_url.strip():
        pass  # --index-url names the index to ask: pip's own extra indexes do not join it
    elif (env.get("PIP_EXTRA_INDEX_URL") or "").strip():
        extra = env["PIP_EXTRA_INDEX_URL"].split()
        extra_source = "PIP_EXTRA_INDEX_URL"
    elif "extra-index-url" in pip_files:
        extra = pip_files["extra-index-url"].text.split()
        extra_source = pip_files["extra-index-url"].source

    def usable(url: str, what: str) -> str:
        return _check_url(expand_env(url, env, what=what), what=what)

    index_url = usable(index.text, f"the index URL from {index.source}")
    extra_urls: list[str] = []
    for url in extra:
        if extra_source != "[tool.govern] extra-index-url" and url.startswith("file:"):
            continue  # pip's local directories of wheels: not a Simple API govern can poll
        checked = usable(url, f"an extra index URL from {extra_source}")
        if checked != index_url and checked not in extra_urls:
            extra_urls.append(checked)
    mapped: dict[str, str] = {
        canonicalize_name(project): usable(url, f"the index URL of {project}")
        for project, url in (per_package or {}).items()
    }
    return IndexSettings(
        index_url=index_url,
        extra_index_urls=tuple(extra_urls),
        per_package=MappingProxyType(mapped),
        source=index.source,
        trusted_redirects=tuple(
            usable(url, "an origin of trusted-redirects") for url in trusted_redirects
        ),
    )
