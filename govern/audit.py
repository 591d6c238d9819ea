"""The audit workflow: find sources, follow includes, classify, annotate, judge.

Pure library code: no printing, no exit codes, no network, no database. The
CLI renders the :class:`~govern.report.AuditReport` this returns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import Specifier
from packaging.version import Version

from govern.config import Config
from govern.errors import SourceNotFound
from govern.exclusions.annotations import read_annotations
from govern.exclusions.classify import classify
from govern.exclusions.model import Annotation, Exclusion, Kind, exclusion_key
from govern.report import AuditReport
from govern.sources.discover import discover, glob_match, source_format_for
from govern.sources.model import ConfiguredLock, Entry, Include, Problem, Source, SourceFormat
from govern.sources.reading import Unreadable, os_reason, read_bounded, refusal
from govern.sources.requirements_txt import read_requirements

if TYPE_CHECKING:
    from govern.policy.model import Policy

_VERSION_WORD_RE = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+(?:(?:a|b|rc|\.post|\.dev)\d+)?)(?![\w])")


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """Knobs of one audit run that do not come from configuration."""

    today: date
    allow_outside_root: bool = False
    environ: Mapping[str, str] | None = None
    findings: bool = True  # False: sources and exclusions only (govern track)
    # Versions known bad beyond this audit's own bad=: package -> version -> where it is
    # known (the store's, with `govern audit --db`): for lock-holds-known-bad.
    known_bad: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _resolve(path: Path) -> Path:
    """``path.resolve()`` that survives symlink loops (they are reported, not raised)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # RuntimeError: "Symlink loop from ..."
        return path.absolute()  # (3.11/3.12); ValueError: a NUL byte


def _display(path: Path, root: Path) -> str:
    try:
        return _resolve(path).relative_to(_resolve(root)).as_posix()
    except ValueError:
        return path.as_posix()


def _inside(path: Path, root: Path) -> bool:
    try:
        _resolve(path).relative_to(_resolve(root))
    except ValueError:
        return False
    return True


class _Loader:
    """Reads sources once each, following ``-r``/``-c`` includes depth first."""

    def __init__(
        self,
        root: Path,
        config: Config,
        options: AuditOptions,
        extra_roots: Sequence[Path] = (),
    ) -> None:
        self.root = root
        self.config = config
        self.roots = [root, *extra_roots]
        self.options = options
        self.sources: dict[Path, Source] = {}
        self.problems: list[tuple[str, Problem]] = []
        self.allow_outside = options.allow_outside_root or config.allow_includes_outside_root

    def inside(self, path: Path) -> bool:
        """Whether ``path`` (links resolved) lies under the root or a named file's folder."""
        return any(_inside(path, root) for root in self.roots)

    def refuse(self, file: Path) -> None:
        """Record a discovered file that leads outside the audited directory."""
        self.problems.append(
            (
                _display(file, self.root),
                Problem(
                    "include-outside-root",
                    1,
                    f"{file.name} is a link to a file outside the audited directory; not read",
                    hint="replace the link by the file, or pass --allow-outside-root",
                ),
            )
        )

    def problem(self, source: str, problem: Problem) -> None:
        """Record a problem of the loading (an include not followed, a file not read)."""
        self.problems.append((source, problem))

    def load(self, file: Path, fmt: SourceFormat, stack: tuple[Path, ...] = ()) -> None:
        """Read ``file`` and, depth first, the files it includes."""
        key = _resolve(file)
        if key in self.sources:
            return
        display = _display(file, self.root)
        if not stack and not self.allow_outside and not self.inside(file):
            # A file named on the command line that is a link out of its folder (to
            # /proc/self/environ, say) is refused as discovery refuses it.
            self.refuse(file)
            return
        source = read_source(
            file,
            display_path=display,
            fmt=fmt,
            root=self.root,
            environ=self.options.environ,
            configured=configured_lock(self.config, display),
        )
        self.sources[key] = source
        for include in source.includes:
            if include.resolved is None or include.kind == "group":
                continue
            child_fmt = (
                SourceFormat.CONSTRAINTS
                if include.kind == "constraints"
                else SourceFormat.REQUIREMENTS
            )
            target = self.follow(display, include, (*stack, key))
            if target is not None:
                self.load(target, child_fmt, (*stack, key))

    def follow(self, display: str, include: Include, stack: tuple[Path, ...]) -> Path | None:
        """The file an include leads to, normalised, or None (a problem says why)."""
        assert include.resolved is not None

        def problem(rule: str, message: str, hint: str) -> None:
            self.problem(display, Problem(rule, include.line, message, hint=hint))

        shown = _shown(include.target)
        try:
            # Resolved, so that a chain of "-c ../dN/r.txt" does not grow a longer path
            # at each step (until the OS refuses it) and every cycle is seen.
            target = include.resolved.resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            why = (
                "is a broken or looping symlink"
                if isinstance(exc, RuntimeError)
                else f"cannot be followed: {os_reason(exc)}"
            )
            problem("include-not-found", f"{shown} {why}", _INCLUDE_HINT)
            return None
        if target in stack:
            chain = " -> ".join(_display(p, self.root) for p in (*stack, target))
            problem(
                "include-cycle",
                f"include cycle: {chain}",
                "remove one of the includes so that the chain ends",
            )
            return None
        if len(stack) >= MAX_INCLUDE_DEPTH:
            problem(
                "include-too-deep",
                f"{shown} is not followed: includes are followed {MAX_INCLUDE_DEPTH} files deep",
                "include the files from fewer levels",
            )
            return None
        if not self.allow_outside and not self.inside(target):
            problem(
                "include-outside-root",
                f"{shown} is outside the audited directory; not followed",
                "audit a directory that contains it, or pass --allow-outside-root",
            )
            return None
        try:
            is_file = target.is_file()
            refused = None if target.is_dir() else refusal(target, shown)
        except (OSError, ValueError) as exc:
            problem("include-not-found", f"{shown} cannot be read: {os_reason(exc)}", _INCLUDE_HINT)
            return None
        if refused is not None:  # a FIFO, a device, /proc/...
            problem(refused.rule or "source-refused", refused.message, refused.hint or "")
            return None
        if not is_file:
            problem(
                "include-not-found",
                f"{shown} {_missing(include.resolved)}"
                + (
                    ""  # the expanded path could show a ${VAR}'s value
                    if "${" in include.target
                    else f" (looked for {_shown(_display(target, self.root))})"
                ),
                _INCLUDE_HINT,
            )
            return None
        return target


MAX_INCLUDE_DEPTH = 32
"""How many files deep ``-r``/``-c`` includes are followed (pip has no limit; a chain of
a thousand is an attack, not a layout)."""

_INCLUDE_HINT = "includes are relative to the including file"
_SHOWN_PATH = 200


def _shown(path: str) -> str:
    """A path for a one-line message: control characters escaped, a long one cut."""
    text = path if path.isprintable() else repr(path)[1:-1]
    return text if len(text) <= _SHOWN_PATH else f"{text[:_SHOWN_PATH]}… ({len(text):,} characters)"


def _missing(target: Path) -> str:
    """Why an include target cannot be read, in a few words."""
    try:
        if target.is_dir():
            return "is a directory, not a requirements file"
        if target.is_symlink():
            return "is a broken or looping symlink"
    except (OSError, ValueError) as exc:
        return f"cannot be read: {os_reason(exc)}"
    return "does not exist"


def _git_config(root: Path) -> Path | None:
    """The git config of the repository at ``root``, worktrees and submodules included."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git / "config"
    pointer = _small_text(dot_git)
    if pointer is None:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    try:
        gitdir = (root / pointer.removeprefix("gitdir:").strip()).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    common = _small_text(gitdir / "commondir")  # a worktree's config is the main one's
    if common is None:
        return gitdir / "config"
    return _resolve(gitdir / common / "config")


def _small_text(path: Path) -> str | None:
    """A file of git's own (``.git``, ``commondir``, ``config``), read bounded, stripped."""
    data = read_bounded(path, limit=_GIT_FILE_LIMIT)
    return None if isinstance(data, Unreadable) else data.decode("utf-8", "replace").strip()


_GIT_FILE_LIMIT = 1024 * 1024


def repository_name(root: Path, config: Config) -> str:
    """A stable name for the repository: configured, else git's origin, else empty.

    The origin URL becomes ``host/owner/name`` (github.com/vllm-project/vllm), with
    no scheme, user or credentials.
    """
    if config.repository:
        return config.repository
    git_config = _git_config(root)
    text = (_small_text(git_config) if git_config else None) or ""
    match = re.search(r'\[remote "origin"\][^\[]*?url\s*=\s*(\S+)', text)
    if not match:
        return ""
    url = re.sub(r"^[a-z+]+://", "", match.group(1))
    url = re.sub(r"^[^@/]*@", "", url)  # credentials and ssh users never enter a key
    return url.replace(":", "/").removesuffix(".git")


def _names_version(reason: str | None, version: str) -> bool:
    """Whether ``reason`` names ``version`` (PEP 440 equality: 14.1 names 14.1.0)."""
    if not reason:
        return False
    try:
        wanted = Version(version)
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return False
    for raw in _VERSION_WORD_RE.findall(reason):
        try:
            if Version(raw) == wanted:
                return True
        except ValueError:  # InvalidVersion, or a number past the int-string limit
            continue
    return False


def _bad_versions(kind: Kind, spec: Specifier, annotation: Annotation) -> tuple[str, ...]:
    """Known-bad versions: the annotation's ``bad=``, else what the clause itself names.

    ``!=V`` names V. A cap ``<V`` names V only when its reason does too (vLLM's
    "CuPy 14.1.0 imports pytest ... Use <14.1.0"): other versions in a reason are
    as often the fix ("wait for 2.1") as the breakage, so none is guessed.
    """
    if annotation.bad_versions:
        return annotation.bad_versions
    if kind is Kind.NOT_EQUAL:
        return (spec.version,)
    if spec.operator == "<" and _names_version(annotation.reason, spec.version):
        return (spec.version,)
    return ()


def _exclusions(source: Source, annotations: list[Annotation], repository: str) -> list[Exclusion]:
    if source.lock is not None:  # a lock's pins are how the intent was resolved: no exclusions
        return []
    out: list[Exclusion] = []
    for entry, annotation in zip(source.entries, annotations, strict=True):
        out.extend(_entry_exclusions(source, entry, annotation, repository))
    return out


def _entry_exclusions(
    source: Source, entry: Entry, annotation: Annotation, repository: str
) -> list[Exclusion]:
    requirement = entry.requirement
    if requirement is None or entry.name is None or not entry.constrainable:
        return []
    specs = list(requirement.specifier)
    if len(specs) > 1:
        specs.sort(key=str)
    out: list[Exclusion] = []
    marker: str | None = None
    for spec in specs:
        kinds = classify(spec)
        if kinds is None:
            continue
        if marker is None and requirement.marker is not None:
            marker = str(requirement.marker)  # only needed once a clause is an exclusion
        kind, sub_kind = kinds
        clause = str(spec)
        bad = _bad_versions(kind, spec, annotation)
        out.append(
            Exclusion(
                id=exclusion_key(
                    repository, source.path, entry.name, marker, clause, group=entry.group
                ),
                repository=repository,
                source=source.path,
                line=entry.line,
                column=entry.column,
                package=entry.name,
                requirement=entry.text,
                marker=marker,
                clause=clause,
                operator=spec.operator,
                version=spec.version,
                kind=kind,
                sub_kind=sub_kind,
                group=entry.group,
                annotation=annotation,
                bad_versions=bad,
            )
        )
    return out


def resolve_targets(paths: Sequence[Path], cwd: Path) -> tuple[Path, list[Path] | None]:
    """The audit root, and the paths named (None: discover everything under the root).

    One directory is the root. Otherwise the root is the working directory, and the
    paths named (files, read whatever their name, and directories, discovered with
    the configuration's globs) are returned for :func:`audit_targets`.
    """
    if not paths:
        return cwd, None
    for path in paths:
        try:
            found = path.exists()
        except (OSError, ValueError) as exc:  # too long for the OS, a NUL byte
            raise SourceNotFound(
                f"{_shown(str(path))} cannot be read: {os_reason(exc)}",
                tip="Name a requirements file, a pyproject.toml or a directory.",
            ) from None
        if not found:
            raise SourceNotFound(
                f"{_shown(str(path))} does not exist",
                tip="Name a requirements file, a pyproject.toml or a directory.",
            )
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0], None
    return cwd, list(paths)


def audit(
    paths: Sequence[Path],
    *,
    config: Config,
    policy: Policy,
    options: AuditOptions,
    cwd: Path | None = None,
) -> AuditReport:
    """Audit ``paths`` (a directory, or files) under ``policy``."""
    root, files = resolve_targets(paths, cwd or Path(os.getcwd()))
    return audit_targets(root, files, config=config, policy=policy, options=options)


def audit_targets(
    root: Path,
    files: list[Path] | None,
    *,
    config: Config,
    policy: Policy,
    options: AuditOptions,
) -> AuditReport:
    """Audit the paths :func:`resolve_targets` gives (None: discover under ``root``)."""
    from govern.policy.engine import evaluate  # here: a sync reads sources, not rules

    named = [p for p in files or () if not p.is_dir()]
    rejected: list[tuple[Path, Problem]] = []  # found by name, not requirements by content
    if files is None:
        locks = [lock.path for lock in config.locks]  # read whatever their name
        discovered = discover(
            root, include=[*config.include, *locks], exclude=config.exclude, rejected=rejected
        )
    else:
        # Directories named beside others: the exclude globs still apply, relative to
        # the root (the working directory) like every path govern shows.
        discovered = [
            file
            for directory in files
            if directory.is_dir()
            for file in discover(directory, rejected=rejected)
            if not any(glob_match(g, _display(file, root)) for g in config.exclude)
        ]
    # A file named on the command line may include its siblings wherever it lives.
    loader = _Loader(root, config, options, extra_roots=[p.parent for p in named])
    loader.problems.extend(
        (_display(file, root), problem)
        for file, problem in rejected
        if not any(glob_match(g, _display(file, root)) for g in config.exclude)
    )
    for file in discovered:
        if not loader.allow_outside and not loader.inside(file):
            # A symlink that leads out of the tree (to /proc/self/environ, say) is not
            # read: its content would be echoed into CI logs.
            loader.refuse(file)
            continue
        loader.load(file, source_format_for(file))
    for file in named:
        # A file named directly is read whatever its name: *.toml is a pyproject.
        fmt = source_format_for(file)
        if file.suffix == ".toml" and not fmt.is_lock:
            fmt = SourceFormat.PYPROJECT
        loader.load(file, fmt)
    sources = sorted(loader.sources.values(), key=lambda s: s.path)
    repository = repository_name(root, config)
    settings = config.comments
    exclusions: list[Exclusion] = []
    problems = list(loader.problems)
    suppressed: dict[tuple[str, int], frozenset[str]] = {}
    for source in sources:
        annotations = read_annotations(source, settings, config.annotations)
        for entry, annotation in zip(source.entries, annotations, strict=True):
            if annotation.suppress:
                key = (source.path, entry.line)
                suppressed[key] = suppressed.get(key, frozenset()) | annotation.suppress
        seen: set[tuple[int, str]] = set()
        for annotation in annotations:
            for problem in annotation.problems:
                if (problem.line, problem.message) not in seen:
                    seen.add((problem.line, problem.message))
                    problems.append((source.path, problem))
        exclusions.extend(_exclusions(source, annotations, repository))
    findings = (
        evaluate(
            policy,
            sources,
            exclusions,
            problems,
            today=options.today,
            suppressed=suppressed,
            known_bad=options.known_bad,
        )
        if options.findings
        else []
    )
    return AuditReport(
        root=root,
        sources=tuple(sources),
        exclusions=tuple(exclusions),
        findings=tuple(findings),
        policy=policy,
    )


def source_exclusions(
    file: Path,
    *,
    display_path: str,
    fmt: SourceFormat,
    config: Config,
    repository: str,
    root: Path | None = None,
) -> tuple[Source, list[Exclusion]]:
    """One source read alone (its includes are not followed), and its exclusions (none, for
    a lock; ``root``, where its intent's paths are relative to: the file's folder if None).

    For a file as it was at some commit (``govern track --history``): the same reader,
    annotations and keys as :func:`audit_targets`, without discovery or policy.
    """
    source = read_source(
        file,
        display_path=display_path,
        fmt=fmt,
        root=root or file.parent,
        configured=configured_lock(config, display_path),
    )
    annotations = read_annotations(source, config.comments, config.annotations)
    return source, _exclusions(source, annotations, repository)


def configured_lock(config: Config, path: str) -> ConfiguredLock | None:
    """The ``[[locks]]`` entry of the configuration that names ``path``, if any."""
    return next((lock for lock in config.locks if glob_match(lock.path, path)), None)


def read_source(
    file: Path,
    *,
    display_path: str,
    fmt: SourceFormat,
    root: Path,
    environ: Mapping[str, str] | None = None,
    configured: ConfiguredLock | None = None,
) -> Source:
    """One file read by its format: a pyproject, a TOML or JSON lock, or requirements (a
    compiled one becomes a lock, tied to the intent its header names; so does one the
    configuration names as a lock)."""
    if fmt is SourceFormat.PYPROJECT:
        # Imported here: a tree of requirements files never pays for this reader.
        from govern.sources.pyproject import read_pyproject

        return read_pyproject(file, display_path=display_path)
    if fmt.is_lock and fmt is not SourceFormat.COMPILED:
        from govern.sources.locks import read_lock

        return read_lock(file, display_path=display_path, fmt=fmt, root=root)
    read_as = SourceFormat.REQUIREMENTS if fmt is SourceFormat.COMPILED else fmt
    source = read_requirements(file, display_path=display_path, fmt=read_as, environ=environ)
    from govern.sources.locks import as_compiled_lock

    return as_compiled_lock(source, root=root, configured=configured) or source
