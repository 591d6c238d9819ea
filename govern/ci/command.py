"""The ``command`` provider: try a candidate with a local command, optionally in a fresh venv.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import shlex
import signal
import sys
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from string import Formatter
from typing import Any

from govern.ci.base import (
    Conclusion,
    Provider,
    RunRef,
    RunStatus,
    Started,
    Trial,
    excerpt,
    find_evidence,
    judge_evidence,
)
from govern.errors import ConfigError
from govern.index.model import DistributionFile, FileKind
from govern.redact import SECRET_NAME, redact, scrub, secret_forms

# Progress of the slow steps (a fresh environment, the check): `govern verify` shows it.
logger = logging.getLogger(__name__)

PLACEHOLDERS = ("package", "version", "requirement", "constraints", "profile", "python")
_KEYS = {"provider", "command", "shell", "isolated", "timeout", "log-limit", "workdir"}
_LOG_LIMIT = 1024 * 1024
_COULD_NOT_RUN = (126, 127)  # a shell's "not executable" and "not found"
_DRAIN_SECONDS = 2.0
_EXIT_POLL = 0.02
_INSTALL_TIMEOUT = 900.0
# Index settings of pip's that would change where the candidate comes from.
_PIP_INDEX_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONSTRAINT",
    "PIP_REQUIREMENT",
    "PIP_REQUIRE_VIRTUALENV",
    "PIP_USER",
    "PIP_TARGET",
    "PIP_PREFIX",
)

# The default check: import each top-level module of the distribution, from its RECORD.
_IMPORT_CHECK = """
import importlib, importlib.metadata as m, sys
dist = m.distribution(sys.argv[1])
names = set()
for f in dist.files or ():
    parts = f.parts
    if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] == "..":
        continue
    if len(parts) == 1 and parts[0].endswith((".py", ".so", ".pyd")):
        names.add(parts[0].split(".", 1)[0])
    elif len(parts) == 2 and parts[1] == "__init__.py":
        names.add(parts[0])
if not names:
    sys.exit("no importable top-level module in " + sys.argv[1])
for name in sorted(names):
    importlib.import_module(name)
    print("imported", name)
"""
_VERSION_CHECK = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
# The tags this interpreter installs, best first (packaging's, else the copy inside pip).
_TAGS_CHECK = """
try:
    from packaging import tags
except ImportError:
    from pip._vendor.packaging import tags
for tag in tags.sys_tags():
    print(tag)
"""


def check_template(template: Sequence[str], what: str) -> None:
    """Refuse a template with a placeholder govern does not fill (a typo would run as is)."""
    for argument in template:
        try:
            fields = [name for _, name, _, _ in Formatter().parse(argument) if name is not None]
        except ValueError as exc:
            raise ConfigError(f"{what}: {argument!r} is not a valid template ({exc})") from None
        for name in fields:
            if name not in PLACEHOLDERS:
                raise ConfigError(
                    f"{what}: unknown placeholder {{{name}}} in {argument!r}",
                    tip=f"Known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; "
                    "write {{ and }} for literal braces.",
                )


@dataclass(frozen=True, slots=True)
class _Output:
    """A finished process: its exit status (None: killed at the time-out) and its output."""

    returncode: int | None
    log: str
    started: bool = True  # False: the program could not be started at all
    reason: str = ""  # why it did not go on, when govern refused before running anything


@dataclass(frozen=True, slots=True)
class _Fetched:
    """The candidate's file on disk, and the sha256 it was checked against."""

    path: Path
    sha256: str


class Command(Provider):
    """Runs the check as a local process and reports its exit and its evidence."""

    kind = "command"

    def __init__(
        self,
        name: str,
        *,
        command: Sequence[str] = (),
        shell: bool = False,
        isolated: bool = False,
        timeout: float = 3600.0,
        log_limit: int = _LOG_LIMIT,
        workdir: Path | None = None,
        python: str = sys.executable,
        environ: Mapping[str, str] | None = None,
        withheld: Collection[str] = (),
    ) -> None:
        """``command`` is the argv template (with ``shell``, one shell command string);
        ``withheld`` names the variables configuration reads secrets from."""
        super().__init__(name, timeout=timeout)
        if shell and len(command) != 1:
            raise ConfigError(f"[tool.govern.ci.{name}]: with shell = true, give one command")
        check_template(command, f"[tool.govern.ci.{name}] command")
        self.command = tuple(command)
        self.shell = shell
        self.isolated = isolated
        self.log_limit = log_limit
        self.workdir = workdir
        self.python = python
        given = dict(os.environ if environ is None else environ)
        # Credentials in govern's own environment (CI and forge tokens, the dashboard's, a
        # webhook's URL) are not the check's business: a reproducer comes from a repository
        # file, and the log is shown on the dashboard. Those named like credentials and
        # those configuration names are left out of the child's environment and scrubbed.
        held = {k for k in given if SECRET_NAME.search(k) or k in withheld}
        self._environ = {k: v for k, v in given.items() if k not in held}
        self._secrets = secret_forms(given[k] for k in held if given[k])
        self._results: dict[str, RunStatus] = {}

    # -- Provider -----------------------------------------------------------------------------

    async def start(self, trial: Trial) -> Started:
        """Run the trial to its end (a local run has no queue): its status is final."""
        run = RunRef(run_id=trial.correlation_id)
        with tempfile.TemporaryDirectory(prefix="govern-verify-") as scratch:
            status = await self._run(trial, Path(scratch))
        self._results[run.run_id] = status
        return Started(run=run, status=status)

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        """The result of a run this process started; any other run was lost with its process."""
        found = self._results.get(run.run_id)
        if found is not None:
            return found
        return RunStatus(
            Conclusion.ERRORED,
            "the local run ended with the govern process that started it",
            finished_at=datetime.now(UTC),
        )

    # -- the run ------------------------------------------------------------------------------

    async def _run(self, trial: Trial, scratch: Path) -> RunStatus:
        constraints = scratch / "constraints.txt"
        constraints.write_text(trial.constraints, encoding="utf-8")
        env = {k: v for k, v in self._environ.items() if not k.startswith("GOVERN_")}
        env.update(
            GOVERN_PACKAGE=trial.package,
            GOVERN_VERSION=str(trial.version),
            GOVERN_REQUIREMENT=trial.requirement,
            GOVERN_PROFILE=trial.profile,
            GOVERN_CONSTRAINTS=str(constraints),
        )
        python = self.python
        log: list[str] = []
        said: list[str] = []
        if self.isolated:
            if trial.index_url is None:  # never a guess: pip alone would go to a public index
                return self._finish(
                    Conclusion.ERRORED,
                    "no index is configured to install the candidate from (--index-url, "
                    "index-url in [tool.govern], or pip's configuration)",
                    log,
                )
            venv = scratch / "venv"
            began = asyncio.get_running_loop().time()
            logger.info(
                "%s: building a fresh environment (download, pip install)", trial.requirement
            )
            prepared = await self._prepare(trial, venv, constraints, env)
            took = asyncio.get_running_loop().time() - began
            logger.info("%s: environment ready in %.1f s", trial.requirement, took)
            log.append(prepared.log)
            if prepared.returncode != 0:
                why = prepared.reason or _exit(prepared.returncode, _INSTALL_TIMEOUT)
                return self._finish(
                    Conclusion.ERRORED,
                    f"{trial.requirement} could not be installed into a fresh environment ({why})",
                    log,
                )
            python = str(_venv_python(venv))
            env["VIRTUAL_ENV"] = str(venv)
            env["PATH"] = os.pathsep.join([str(_venv_python(venv).parent), env.get("PATH", "")])
            env.pop("PYTHONHOME", None)
        values = {
            "package": trial.package,
            "version": str(trial.version),
            "requirement": trial.requirement,
            "constraints": str(constraints),
            "profile": trial.profile,
            "python": python,
        }
        checks: list[tuple[str, list[str]]] = []
        if self.command and not (trial.reproducer_only and trial.reproducer):
            checks.append(("command", self._argv(self.command, values, shell=self.shell)))
        if trial.reproducer:
            try:
                reproducer = shlex.split(trial.reproducer)
                check_template(reproducer, "the verify annotation")
            except (ValueError, ConfigError) as exc:
                problem = exc.message if isinstance(exc, ConfigError) else str(exc)
                return self._finish(Conclusion.ERRORED, f"the reproducer: {problem}", log)
            checks.append(("reproducer", self._argv(reproducer, values, shell=False)))
        if not checks:
            if not self.isolated:
                return self._finish(
                    Conclusion.ERRORED,
                    "nothing to run: no command, no reproducer (verify=) and not isolated",
                    log,
                )
            checks.append(("import check", [python, "-c", _IMPORT_CHECK, trial.package]))
        passed = True
        detail = ""
        logger.info("%s: running the %s", trial.requirement, " and the ".join(c[0] for c in checks))
        for label, argv in checks:
            log.append(self._clean(f"$ {shlex.join(argv)}\n"))
            output = await self._process(argv, env, self.timeout)
            log.append(output.log)
            said.append(output.log)  # evidence is what the processes printed, not our echo
            if output.returncode is None:
                return self._finish(
                    Conclusion.TIMED_OUT, f"the {label} ran past {self.timeout:g} s", log
                )
            if not output.started or (self.shell and output.returncode in _COULD_NOT_RUN):
                return self._finish(
                    Conclusion.ERRORED,
                    f"the {label} could not be run ({_exit(output.returncode, self.timeout)})",
                    log,
                )
            if output.returncode != 0:
                passed = False
                detail = f"the {label} failed ({_exit(output.returncode, self.timeout)})"
                break
        if passed:
            detail = "exit status 0" if len(checks) == 1 else f"{len(checks)} checks passed"
        installed = await self._installed(trial, python, env) if self.isolated else None
        if installed is None:
            installed = find_evidence("".join(said), trial.package)
        conclusion, detail = judge_evidence(passed, trial, installed, detail)
        return self._finish(conclusion, detail, log, installed)

    def _argv(
        self, template: Sequence[str], values: Mapping[str, str], *, shell: bool
    ) -> list[str]:
        # Without a shell (the default) each value fills whole arguments: nothing from an
        # index can become shell syntax. A configured shell gets the values quoted.
        if shell:
            quoted = {k: shlex.quote(v) for k, v in values.items()}
            return ["/bin/sh", "-c", template[0].format_map(quoted)]
        return [argument.format_map(values) for argument in template]

    async def _prepare(
        self, trial: Trial, venv: Path, constraints: Path, env: Mapping[str, str]
    ) -> _Output:
        """A fresh venv with the candidate installed from the file the poll saw on the index
        (its sha256 checked), then its dependencies from the configured index."""
        # The file first: a refused one needs no environment.
        fetched = await self._fetch(trial, venv.parent / "dist", env)
        if isinstance(fetched, str):
            return _Output(1, f"{self._clean(fetched)}\n", reason=self._clean(fetched))
        pip_here = importlib.util.find_spec("pip") is not None
        create = [self.python, "-m", "venv", str(venv)]
        if pip_here:
            create.insert(3, "--without-pip")  # this interpreter's pip installs into it
        made = await self._process(create, env, _INSTALL_TIMEOUT)
        if made.returncode != 0:
            return made
        if pip_here:
            _lend_pip(venv)  # so that a check may run `{python} -m pip ...` in it
        install_env = {k: v for k, v in env.items() if k not in _PIP_INDEX_VARIABLES}
        install_env["PIP_CONFIG_FILE"] = os.devnull
        install_env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        pip = (
            [self.python, "-m", "pip", "--python", str(_venv_python(venv))]
            if pip_here
            else [str(_venv_python(venv)), "-m", "pip"]
        )
        indexes: list[str] = []
        if trial.index_url:
            indexes += ["--index-url", trial.index_url]
        for extra in trial.extra_index_urls:
            indexes += ["--extra-index-url", extra]
        # The candidate alone, from the file checked above, by its path: pip checks its
        # hash again (--require-hashes; that one file's, tighter than any file of the
        # release), so nothing else can take its place. Its
        # dependencies come next, from the index as usual: in hash-checking mode pip would
        # want a hash of every dependency too, and the poll stored none (it reads only the
        # pages of the excluded packages). The index is named in the first step only for
        # an sdist's build requirements.
        pinned = venv.parent / "candidate.txt"
        line = f"{trial.package} @ {fetched.path.as_uri()} --hash=sha256:{fetched.sha256}\n"
        pinned.write_text(line, "utf-8")
        base = [*pip, "install", "--no-input", "--no-cache-dir"]
        steps = [
            [*base, "--no-deps", "--require-hashes", *indexes, "-r", str(pinned)],
            [*base, *indexes, "--constraint", str(constraints), trial.requirement],
        ]
        log = f"downloaded {fetched.path.name} (sha256 {fetched.sha256})\n{made.log}"
        for argv in steps:
            installed = await self._process(argv, install_env, _INSTALL_TIMEOUT)
            log += f"$ {_shown(argv)}\n{installed.log}"
            if installed.returncode != 0:
                return _Output(installed.returncode, log)
        return _Output(0, log)

    async def _fetch(self, trial: Trial, folder: Path, env: Mapping[str, str]) -> _Fetched | str:
        """The candidate's file, downloaded from the index the poll read and checked against
        the sha256 it stored, or why not."""
        from govern.index.client import IndexClient, http_client
        from govern.index.pipconfig import IndexSettings

        if not trial.files or trial.files_index is None:
            return (
                f"the poll stored no file of {trial.requirement} from the index's page (poll again)"
            )
        tags = await self._tags(env)
        file = best_file(trial.files, tags)
        if file is None:
            return f"no file of {trial.requirement} on the index fits {self.python}"
        settings = IndexSettings(
            index_url=trial.files_index, trusted_redirects=trial.trusted_redirects
        )
        folder.mkdir()
        async with http_client(connections=1) as http:
            got = await IndexClient(http, settings).download(
                file, trial.files_index, folder, timeout=_INSTALL_TIMEOUT
            )
        if not isinstance(got, Path):
            return f"{got.name} was not installed: {got.reason}"
        return _Fetched(got, file.hashes["sha256"].lower())

    async def _tags(self, env: Mapping[str, str]) -> list[str]:
        """The wheel tags the interpreter installs, best first (none: sdists only)."""
        output = await self._process([self.python, "-I", "-c", _TAGS_CHECK], env, 60.0)
        return output.log.split() if output.returncode == 0 else []

    async def _installed(self, trial: Trial, python: str, env: Mapping[str, str]) -> str | None:
        """The version of the package in the environment the check ran in (the evidence)."""
        output = await self._process([python, "-c", _VERSION_CHECK, trial.package], env, 60.0)
        lines = output.log.strip().splitlines()
        if output.returncode != 0 or not lines:
            return None
        from packaging.version import InvalidVersion, Version

        try:
            return str(Version(lines[-1].strip()))
        except InvalidVersion:
            return None

    async def _process(
        self, argv: Sequence[str], env: Mapping[str, str], timeout: float
    ) -> _Output:
        """Run one process (its own session), keeping the end of its output."""
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=dict(env),
                cwd=self.workdir,
                start_new_session=True,
            )
        except OSError as exc:
            reason = f"cannot run {argv[0]!r}: {exc.strerror or exc}\n"
            return _Output(127, self._clean(reason), started=False)
        assert process.stdout is not None
        kept = bytearray()
        dropped = 0

        async def read() -> None:
            nonlocal dropped
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                kept.extend(chunk)
                if len(kept) > self.log_limit:
                    cut = len(kept) - self.log_limit
                    dropped += cut
                    del kept[:cut]

        reader = asyncio.ensure_future(read())
        timed_out = False
        try:
            async with asyncio.timeout(timeout):
                # Not process.wait(): on 3.11 it also waits for every pipe to close, which a
                # leftover child holding stdout never does. returncode is set at the exit.
                while process.returncode is None:
                    await asyncio.sleep(_EXIT_POLL)
            # A process that left a child holding its output (a server, `sleep &`) has
            # ended: its output gets a moment to drain, then the group goes.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), _DRAIN_SECONDS)
        except TimeoutError:
            timed_out = True
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # leftovers too, whatever the exit
            if process.returncode is None:
                await process.wait()
            if not reader.done():
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(reader, _DRAIN_SECONDS)
        text = kept.decode("utf-8", errors="replace")
        if dropped:
            text = f"[... {dropped:,} bytes of output before ...]\n{text}"
        return _Output(None if timed_out else process.returncode, self._clean(text))

    def _clean(self, text: str) -> str:
        """Output as stored: URL credentials redacted, secrets of the environment scrubbed."""
        return scrub(redact(text), self._secrets)

    def _finish(
        self, conclusion: Conclusion, detail: str, log: Sequence[str], installed: str | None = None
    ) -> RunStatus:
        return RunStatus(
            conclusion,
            detail,
            installed=installed,
            log_excerpt=excerpt("".join(log)),
            finished_at=datetime.now(UTC),
        )


def best_file(files: Sequence[DistributionFile], tags: Sequence[str]) -> DistributionFile | None:
    """The file pip would choose for an interpreter of ``tags`` (best first): the wheel of
    the best tag, else an sdist; yanked files and files of other kinds never."""
    rank = {tag: i for i, tag in enumerate(tags)}
    wheels = [
        (min(rank[str(t)] for t in f.tags if str(t) in rank), f.filename, f)
        for f in files
        if f.kind is FileKind.WHEEL and not f.yanked and any(str(t) in rank for t in f.tags)
    ]
    if wheels:
        return min(wheels, key=lambda w: (w[0], w[1]))[2]
    sdists = sorted(
        (f for f in files if f.kind is FileKind.SDIST and not f.yanked),
        key=lambda f: (not f.filename.endswith(".tar.gz"), f.filename),
    )
    return sdists[0] if sdists else None


def _lend_pip(venv: Path) -> None:
    """Make this interpreter's pip importable in a venv made ``--without-pip``: a folder
    holding only a link to pip's package, named by a ``.pth`` file (nothing else of this
    environment is lent; installing pip into each venv would cost a second or more)."""
    spec = importlib.util.find_spec("pip")
    if spec is None or not spec.submodule_search_locations:
        return
    lent = venv / "govern-pip"
    lent.mkdir(exist_ok=True)
    link = lent / "pip"
    if not link.exists():
        link.symlink_to(Path(next(iter(spec.submodule_search_locations))), target_is_directory=True)
    for site in venv.glob("lib/python*/site-packages"):
        (site / "govern-pip.pth").write_text(f"{lent}\n", encoding="utf-8")


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _exit(returncode: int | None, timeout: float) -> str:
    if returncode is None:
        return f"ran past {timeout:g} s"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def _shown(argv: Sequence[str]) -> str:
    return redact(shlex.join(argv))


def from_config(
    name: str,
    options: Mapping[str, Any],
    *,
    root: Path | None = None,
    withheld: Collection[str] = (),
) -> Command:
    """A command provider from ``[tool.govern.ci.NAME]`` (``provider = "command"``);
    ``withheld``: the variables configuration reads secrets from (never handed over)."""
    where = f"[tool.govern.ci.{name}]"
    unknown = set(options) - _KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(sorted(map(repr, unknown)))}",
            tip=f"Known keys: {', '.join(sorted(_KEYS))}.",
        )
    shell = options.get("shell", False)
    isolated = options.get("isolated", False)
    for key, value in (("shell", shell), ("isolated", isolated)):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false")
    command = options.get("command", [])
    if isinstance(command, str):
        command = [command] if shell else shlex.split(command)
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        raise ConfigError(
            f"{where}: command must be a list of arguments (or one string)",
            tip='Write command = ["python", "-c", "import {package}"].',
        )
    timeout = options.get("timeout", 3600)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{where}: timeout must be a positive number of seconds")
    log_limit = options.get("log-limit", _LOG_LIMIT)
    if isinstance(log_limit, bool) or not isinstance(log_limit, int) or log_limit < 1024:
        raise ConfigError(f"{where}: log-limit must be a number of bytes (1024 or more)")
    workdir = options.get("workdir")
    if workdir is not None and not isinstance(workdir, str):
        raise ConfigError(f"{where}: workdir must be a path")
    where_to = Path(workdir) if workdir else None
    if where_to is not None and not where_to.is_absolute() and root is not None:
        where_to = root / where_to
    return Command(
        name,
        command=command,
        shell=shell,
        isolated=isolated,
        timeout=float(timeout),
        log_limit=log_limit,
        workdir=where_to or root,
        withheld=withheld,
    )
