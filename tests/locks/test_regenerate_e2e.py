"""A relaxation regenerates the locks of its intent with the project's own tool, or is not
made (issue 25): real uv and pip-tools against a local index of tiny wheels, real git.

The CuPy story, with a lock: ``cupy-demo<14.1.0`` in the intent, 14.1.1 verified; one branch
changes the intent to ``!=14.1.0`` and the lock to 14.1.1, nothing else moves, and the
tool's own check passes on the branch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import run_cli
from gitrepo import Repo
from lockworld import PYPROJECT, UV, tool_env
from reminderworld import NOW, verify
from sqlmodel import col, select

from govern.config import ProposeConfig, load_config
from govern.demo.index import LocalIndex
from govern.demo.wheels import build_wheel
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import EventKind, RunState, Via
from govern.git.push import Pusher
from govern.locks.installed import LockPins, PinsFor, lock_pins
from govern.locks.regenerate import Regenerator
from govern.locks.tools import ToolCache
from govern.service.propose import Proposer
from govern.service.track import TrackOptions, track
from govern.store.db import Store
from govern.store.models import Event

PIP_COMPILE = shutil.which("pip-compile") or str(Path(sys.executable).parent / "pip-compile")


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LocalIndex]:
    """cupy-demo 14.0.1, 14.1.0 and 14.1.1; helper-demo 1.0 and 2.0 (which must not move)."""
    with LocalIndex(tmp_path / "index") as served:
        for name, versions in (
            ("cupy-demo", ("14.0.1", "14.1.0", "14.1.1")),
            ("helper-demo", ("1.0", "2.0")),
        ):
            for version in versions:
                wheel = build_wheel(tmp_path / "dists" / name / version, name, version)
                served.publish(name, wheel, "2026-05-01T00:00:00Z")
        yield served


def _tool_env(index: LocalIndex, home: Path) -> dict[str, str]:
    return tool_env(index.url, home)


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _world(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """(the bare origin, the user's clone) holding ``files`` on main."""
    seed = Repo(tmp_path / "seed")
    for name, text in files.items():
        (seed.root / name).write_text(text, encoding="utf-8")
    return seed.root, tmp_path / "origin.git"


def _publish(seed: Path, tmp_path: Path) -> tuple[Path, Path]:
    repo = Repo(seed)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "the project and its lock")
    bare = tmp_path / "origin.git"
    repo.git("clone", "-q", "--bare", str(seed), str(bare))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    return bare, clone


def _show(bare: Path, ref: str, path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout


def _changed(bare: Path, branch: str) -> list[str]:
    """The files the branch changes against main."""
    return subprocess.run(
        ["git", "diff", "--name-only", f"main..{branch}"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def _propose(store: Store, clone: Path, index: LocalIndex) -> Proposer:
    return Proposer(
        store,
        pusher_for=lambda root, s: Pusher(root, remote=s.remote),
        # The local checkout's configuration (its [[locks]]), proposing through git.
        config_for=lambda root: dataclasses.replace(
            load_config(root), propose=ProposeConfig(via=Via.GIT)
        ),
        now=lambda: NOW,
        regenerator_for=lambda _config: Regenerator(index_url=index.url),
    )


def _tracked(database_url: str, clone: Path, pins_for: PinsFor | None = None) -> Store:
    store = Store(database_url)
    config = dataclasses.replace(load_config(clone), repository="acme/app")  # its [[locks]]
    track(store, clone, None, config=config, options=TrackOptions(now=NOW))
    verify(store, "14.1.1", package="cupy-demo", pins_for=pins_for)
    return store


def test_a_uv_project_gets_one_branch_with_the_intent_and_uv_lock(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT})
    env = _tool_env(index, tmp_path / "home")
    _run([UV, "lock"], seed, env)
    assert 'version = "14.0.1"' in (seed / "uv.lock").read_text()
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        result = asyncio.run(_propose(store, clone, index).run())
    (outcome,) = result.proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    changed = _changed(bare, outcome.branch)
    assert sorted(changed) == ["pyproject.toml", "uv.lock"]  # one commit, both files
    assert '"cupy-demo!=14.1.0"' in _show(bare, outcome.branch, "pyproject.toml")
    # The branch, checked out, is what uv itself says is up to date.
    work = tmp_path / "review"
    subprocess.run(["git", "clone", "-q", "-b", outcome.branch, str(bare), str(work)], check=True)
    _run([UV, "lock", "--check"], work, env)
    lock = (work / "uv.lock").read_text()
    assert 'name = "cupy-demo"\nversion = "14.1.1"' in lock
    assert 'name = "helper-demo"\nversion = "1.0"' in lock  # nothing else moved


def test_the_body_says_whether_the_verification_installed_the_branch_s_lock(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """The runs record what they were given of the lock (a digest of its other pins); the
    change request says whether that is what its branch's lock pins. The base branch
    moving helper-demo after the verification makes it say so."""
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT})
    env = _tool_env(index, tmp_path / "home")
    _run([UV, "lock"], seed, env)
    bare, clone = _publish(seed, tmp_path)
    regenerator = Regenerator(index_url=index.url)

    def pins(root: Path, ref: ExclusionRef, fmt: str, version: str) -> LockPins | None:
        return lock_pins(root, ref=ref, fmt=fmt, version=version, regenerator=regenerator)

    with _tracked(database_url, clone, pins_for=pins) as store:
        (dry,) = asyncio.run(_propose(store, clone, index).run(dry_run=True)).proposals
        assert dry.body is not None
        assert "The verification installed the candidate with these locks' versions" in dry.body
        # The base branch moves helper-demo (1.5 appears; the owner upgrades it).
        wheel = build_wheel(tmp_path / "dists" / "helper-demo" / "1.5", "helper-demo", "1.5")
        index.publish("helper-demo", wheel, "2026-06-01T00:00:00Z")
        _run([UV, "lock", "--upgrade-package", "helper-demo"], seed, env)
        Repo(seed).git("commit", "-q", "-am", "helper-demo 1.5")
        Repo(seed).git("push", "-q", str(bare), "main")
        (moved,) = asyncio.run(_propose(store, clone, index).run(dry_run=True)).proposals
    assert moved.body is not None
    assert "**The verification installed other versions of the other packages" in moved.body
    # Verified again now, with the checkout's configuration: the copy is of the remote's base
    # branch (what the proposal changes), not of the checkout that is behind it.
    ref = _exclusion_ref(database_url)
    again = lock_pins(
        clone,
        ref=ref,
        fmt="pyproject",
        version="14.1.1",
        regenerator=regenerator,
        config=load_config(clone),
    )
    assert again is not None
    assert again.origin == "main of origin"
    assert "helper-demo==1.5" in again.pins
    local = lock_pins(clone, ref=ref, fmt="pyproject", version="14.1.1", regenerator=regenerator)
    assert local is not None
    assert local.origin == "the checkout's last commit"
    assert "helper-demo==1.0" in local.pins


def _exclusion_ref(database_url: str) -> ExclusionRef:
    from govern.store.models import StoredExclusion
    from govern.store.refs import from_row

    with Store(database_url) as store, store.session() as session:
        row = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == "cupy-demo")
        ).one()
        return from_row(row, repository="acme/app", source="pyproject.toml")


def test_a_pip_compile_lock_moves_only_the_package_and_keeps_its_hashes(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    seed, _ = _world(
        tmp_path,
        {
            "requirements.in": (
                "# 14.1.0 imports a module nobody ships (cupy/cupy#9963)\n"
                "cupy-demo<14.1.0\nhelper-demo<2\n"
            )
        },
    )
    env = _tool_env(index, tmp_path / "home")
    _run([PIP_COMPILE, "--generate-hashes", "--no-emit-index-url", "requirements.in"], seed, env)
    before = (seed / "requirements.txt").read_text()
    assert "cupy-demo==14.0.1" in before
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        result = asyncio.run(_propose(store, clone, index).run(dry_run=True))
        (dry,) = result.proposals
        assert dry.state == RunState.DRY_RUN, dry
        assert dry.body is not None
        assert "regenerated by `pip-compile`" in dry.body
        assert "nothing else moved" in dry.body
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    after = _show(bare, outcome.branch, "requirements.txt")
    assert "cupy-demo==14.1.1 \\\n    --hash=sha256:" in after
    assert "helper-demo==1.0" in after
    # The header still says how the file is made; pip-compile run again on the branch
    # writes the same file.
    (command,) = [line for line in before.splitlines() if line.startswith("#    pip-compile")]
    assert command in after.splitlines()
    assert "--upgrade-package" not in after
    work = tmp_path / "review"
    subprocess.run(["git", "clone", "-q", "-b", outcome.branch, str(bare), str(work)], check=True)
    _run([PIP_COMPILE, "--generate-hashes", "--no-emit-index-url", "requirements.in"], work, env)
    assert (work / "requirements.txt").read_text() == after
    # The branch's lock installs the candidate (hash-checked, from the index).
    install = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-"]
    report = _run(
        [*install, "--ignore-installed", "--require-hashes", "-r", "requirements.txt"], work, env
    )
    installs = {
        item["metadata"]["name"]: item["metadata"]["version"]
        for item in json.loads(report)["install"]
    }
    assert installs == {"cupy-demo": "14.1.1", "helper-demo": "1.0"}


def test_a_lock_govern_cannot_regenerate_holds_the_proposal_and_says_why_once(
    tmp_path: Path, index: LocalIndex, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed, _ = _world(
        tmp_path,
        {
            "pyproject.toml": PYPROJECT,
            # A PEP 751 lock another tool wrote: govern regenerates only pip's.
            "pylock.toml": (
                'lock-version = "1.0"\ncreated-by = "uv"\n\n'
                '[[packages]]\nname = "cupy-demo"\nversion = "14.0.1"\n'
            ),
        },
    )
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        runs = [asyncio.run(_propose(store, clone, index).run()) for _ in range(2)]
        with store.session() as session:
            held = session.exec(
                select(Event).where(col(Event.kind) == EventKind.PROPOSAL_HELD)
            ).all()
    for result in runs:
        (outcome,) = result.proposals
        assert outcome.state == RunState.HELD
        assert outcome.message is not None
        assert "pylock.toml" in outcome.message
        assert result.failed  # the command exits 1: a person must act
    heads = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/heads"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert heads == ["refs/heads/main"]  # no branch with a stale lock
    assert len(held) == 1  # said once, however many runs
    assert "pylock.toml" in held[0].detail["why"]
    code, out, _ = run_cli(["history", "cupy-demo", "--db", database_url], capsys)
    assert code == 0
    assert "proposal held  cupy-demo 14.1.1: pylock.toml was written by uv, not pip" in out


def test_a_project_that_asks_for_another_uv_is_held_with_what_it_asks(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT})
    env = _tool_env(index, tmp_path / "home")
    _run([UV, "lock"], seed, env)
    with (seed / "pyproject.toml").open("a", encoding="utf-8") as stream:
        stream.write('\n[tool.uv]\nrequired-version = "==0.0.1"\n')
    _bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.HELD
    assert outcome.message is not None
    assert "asks for uv ==0.0.1 (required-version)" in outcome.message
    assert outcome.tip is not None
    assert "pip install 'uv==0.0.1'" in outcome.tip


def test_the_uv_the_project_asks_for_is_installed_into_govern_s_cache(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """The uv beside govern says 0.0.1; the project asks for the real one's version: govern
    installs that uv from the configured index into its cache (a fresh venv, pip, wheels
    only) and regenerates the lock with it; a second proposal finds it installed.

    The index's ``uv`` wheel is one the test builds: its command runs the real uv."""
    real = subprocess.run([UV, "--version"], capture_output=True, text=True, check=True)
    version = real.stdout.split()[1]
    wheel = build_wheel(
        tmp_path / "dists" / "uv" / version,
        "uv",
        version,
        files={
            f"uv-{version}.data/scripts/uv": f'#!/bin/sh\nexec "{UV}" "$@"\n',
            "uv/__init__.py": "",
        },
    )
    index.publish("uv", wheel, "2026-05-01T00:00:00Z")
    beside = tmp_path / "old-uv"
    beside.write_text("#!/bin/sh\necho 'uv 0.0.1'\nexit 3\n", encoding="utf-8")
    beside.chmod(0o755)
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT})
    _run([UV, "lock"], seed, _tool_env(index, tmp_path / "home"))
    with (seed / "pyproject.toml").open("a", encoding="utf-8") as stream:
        stream.write(f'\n[tool.uv]\nrequired-version = "=={version}"\n')
    bare, clone = _publish(seed, tmp_path)
    tools = tmp_path / "tools"
    regenerator = Regenerator(
        index_url=index.url,
        tools={"uv": str(beside)},
        cache=ToolCache(root=tools, index_url=index.url),
    )
    with _tracked(database_url, clone) as store:
        proposer = _propose(store, clone, index)
        proposer.regenerator_for = lambda _config: regenerator
        (outcome,) = asyncio.run(proposer.run(dry_run=True)).proposals
        assert outcome.state == RunState.DRY_RUN, outcome
        (installed,) = [p for p in tools.iterdir() if p.is_dir()]
        assert (installed / "bin" / "uv").exists()
        (outcome,) = asyncio.run(proposer.run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    assert 'name = "cupy-demo"\nversion = "14.1.1"' in _show(bare, outcome.branch, "uv.lock")
    assert [p.name for p in tools.iterdir() if p.is_dir()] == [installed.name]  # once


def test_a_tool_the_index_does_not_have_is_refused_and_leaves_nothing_behind(
    tmp_path: Path, index: LocalIndex
) -> None:
    from packaging.specifiers import SpecifierSet

    from govern.locks.regenerate import LockRefused

    cache = ToolCache(root=tmp_path / "tools", index_url=index.url)
    with pytest.raises(LockRefused) as refused:
        cache.executable("uv", SpecifierSet("==0.0.1"), "uv")
    assert "uv==0.0.1 could not be installed into govern's cache" in refused.value.message
    assert "No matching distribution" in refused.value.message  # pip's own words
    assert [p for p in (tmp_path / "tools").iterdir() if p.is_dir()] == []  # no half tool


def test_a_python_tool_from_the_cache_runs_where_it_was_installed(
    tmp_path: Path, index: LocalIndex
) -> None:
    """A console script names its Python by path: the environment is made where it stays
    (Poetry is such a tool)."""
    from packaging.specifiers import SpecifierSet

    wheel = build_wheel(
        tmp_path / "dists" / "toolpkg",
        "toolpkg",
        "1.0",
        files={
            "toolpkg/__init__.py": "def main():\n    print('toolpkg 1.0')\n",
            "toolpkg-1.0.dist-info/entry_points.txt": "[console_scripts]\ntoolcmd = toolpkg:main\n",
        },
    )
    index.publish("toolpkg", wheel, "2026-05-01T00:00:00Z")
    cache = ToolCache(root=tmp_path / "tools", index_url=index.url)
    command = cache.executable("toolpkg", SpecifierSet("==1.0"), "toolcmd")
    said = subprocess.run([str(command)], capture_output=True, text=True, check=True).stdout
    assert said == "toolpkg 1.0\n"
    assert cache.executable("toolpkg", SpecifierSet("==1.0"), "toolcmd") == command  # kept


REGEN = """\
import os
import pathlib

path = pathlib.Path(os.environ["GOVERN_LOCK_PATH"])
name, _, version = os.environ["GOVERN_LOCK_PIN"].partition("==")
lines = path.read_text().splitlines()
path.write_text("".join(
    (f"{name}==={version}" if line.startswith(name + "===") else line) + "\\n" for line in lines
))
"""


def test_a_lock_named_in_the_configuration_is_made_by_its_command(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """OpenStack's shape: a bot's upper-constraints.txt beside the intent, made by a command
    the configuration names; the branch holds the intent and the lock that command wrote."""
    seed, _ = _world(
        tmp_path,
        {
            "global-requirements.txt": (
                "# 14.1.0 imports a module nobody ships (cupy/cupy#9963)\ncupy-demo<14.1.0\n"
            ),
            "upper-constraints.txt": "cupy-demo===14.0.1\nhelper-demo===1.0\n",
            ".govern.toml": (
                '[[locks]]\npath = "upper-constraints.txt"\n'
                'command = "python3 tools/regen.py"\nintent = ["global-requirements.txt"]\n'
            ),
        },
    )
    (seed / "tools").mkdir()
    (seed / "tools" / "regen.py").write_text(REGEN, encoding="utf-8")
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    assert _show(bare, outcome.branch, "upper-constraints.txt") == (
        "cupy-demo===14.1.1\nhelper-demo===1.0\n"
    )
    assert "cupy-demo!=14.1.0" in _show(bare, outcome.branch, "global-requirements.txt")


def test_a_tools_error_never_carries_the_indexs_credentials() -> None:
    regenerator = Regenerator(index_url="https://ci-bot:s3cr3t-t0ken@pkgs.example.invalid/simple/")
    said = regenerator._scrub(
        "error: Failed to fetch: https://ci-bot:s3cr3t-t0ken@pkgs.example.invalid/simple/x/ "
        "(token s3cr3t-t0ken refused)"
    )
    assert "s3cr3t-t0ken" not in said
    assert "pkgs.example.invalid/simple/x/" in said


def test_pip_tools_layers_follow_the_lock_they_are_constrained_by(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """``dev.in`` with ``-c main.txt``: relaxing ``main.in`` regenerates ``main.txt`` and then
    ``dev.txt`` (which holds cupy-demo through the constraint's package), in one commit."""
    reason = "# 14.1.0 imports a module nobody ships (cupy/cupy#9963)\n"
    seed, _ = _world(tmp_path, {})
    layers = seed / "requirements"
    layers.mkdir()
    (layers / "main.in").write_text(reason + "cupy-demo<14.1.0\n", encoding="utf-8")
    (layers / "dev.in").write_text("-c main.txt\ncupy-demo\nhelper-demo<2\n", encoding="utf-8")
    env = _tool_env(index, tmp_path / "home")
    for name in ("main", "dev"):
        _run([PIP_COMPILE, "--no-emit-index-url", f"{name}.in"], layers, env)
    assert "cupy-demo==14.0.1" in (layers / "dev.txt").read_text()
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    changed = _changed(bare, outcome.branch)
    assert sorted(changed) == [
        "requirements/dev.txt",
        "requirements/main.in",
        "requirements/main.txt",
    ]
    assert "cupy-demo==14.1.1" in _show(bare, outcome.branch, "requirements/main.txt")
    dev = _show(bare, outcome.branch, "requirements/dev.txt")
    assert "cupy-demo==14.1.1" in dev
    assert "helper-demo==1.0" in dev


POETRY = shutil.which("poetry") or str(Path(sys.executable).parent / "poetry")


def test_a_poetry_project_gets_the_candidate_and_nothing_else_moves(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """Poetry has no option to upgrade one package: the intent pinned to 14.1.1 is locked,
    then the relaxed intent (Dependabot's way); Poetry's own check passes on the branch."""
    project = PYPROJECT + (
        '\n[tool.poetry]\npackage-mode = false\n\n[[tool.poetry.source]]\nname = "local"\n'
        f'url = "{index.url}"\npriority = "primary"\n'
    )
    seed, _ = _world(tmp_path, {"pyproject.toml": project})
    env = {**_tool_env(index, tmp_path / "home"), "POETRY_CACHE_DIR": str(tmp_path / "pc")}
    _run([POETRY, "lock"], seed, env)
    assert 'name = "cupy-demo"\nversion = "14.0.1"' in (seed / "poetry.lock").read_text()
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    assert sorted(_changed(bare, outcome.branch)) == ["poetry.lock", "pyproject.toml"]
    lock = _show(bare, outcome.branch, "poetry.lock")
    assert 'name = "cupy-demo"\nversion = "14.1.1"' in lock
    assert 'name = "helper-demo"\nversion = "1.0"' in lock
    work = tmp_path / "review"
    subprocess.run(["git", "clone", "-q", "-b", outcome.branch, str(bare), str(work)], check=True)
    assert "All set" in _run([POETRY, "check", "--lock"], work, env)


PDM = shutil.which("pdm") or str(Path(sys.executable).parent / "pdm")


def _pdm_env(index: LocalIndex, home: Path) -> dict[str, str]:
    return {
        **_tool_env(index, home),
        "PDM_PYPI_URL": index.url,
        "PDM_CHECK_UPDATE": "false",
        "PDM_CACHE_DIR": str(home / "pdm-cache"),
        "PDM_USE_VENV": "false",
        "PDM_PYTHON": sys.executable,
    }


def test_a_pdm_project_gets_the_candidate_and_nothing_else_moves(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """PDM: the intent pinned to 14.1.1 is locked reusing every other pin, then the relaxed
    intent; ``pdm lock --check`` passes on the branch."""
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT})
    env = _pdm_env(index, tmp_path / "home")
    _run([PDM, "lock"], seed, env)
    assert 'name = "cupy-demo"\nversion = "14.0.1"' in (seed / "pdm.lock").read_text()
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    assert sorted(_changed(bare, outcome.branch)) == ["pdm.lock", "pyproject.toml"]
    lock = _show(bare, outcome.branch, "pdm.lock")
    assert 'name = "cupy-demo"\nversion = "14.1.1"' in lock
    assert 'name = "helper-demo"\nversion = "1.0"' in lock
    assert "sha256:" in lock  # hashes kept
    work = tmp_path / "review"
    subprocess.run(["git", "clone", "-q", "-b", outcome.branch, str(bare), str(work)], check=True)
    _run([PDM, "lock", "--check"], work, env)


# A PEP 517 backend inside the project (no build requirement to fetch): pip lock reads the
# project's metadata from it.
TINY_BACKEND = """\
import pathlib
import tomllib


def _metadata() -> str:
    project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    lines += [f"Requires-Dist: {r}" for r in project.get("dependencies", [])]
    return "\\n".join(lines) + "\\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = pathlib.Path(metadata_directory) / "app-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError("only the metadata is read")
"""

BUILD_SYSTEM = (
    '\n[build-system]\nrequires = []\nbuild-backend = "tiny_backend"\nbackend-path = ["_backend"]\n'
)


def test_a_pip_lock_moves_only_the_package_and_keeps_its_hashes(
    tmp_path: Path, index: LocalIndex, database_url: str
) -> None:
    """pylock.toml written by ``pip lock``: regenerated by pip lock with every other package
    held at the lock's version (a newer helper-demo is not taken); pip lock run again on
    the branch, helper-demo held, writes the same file."""
    seed, _ = _world(tmp_path, {"pyproject.toml": PYPROJECT + BUILD_SYSTEM})
    (seed / "_backend").mkdir()
    (seed / "_backend" / "tiny_backend.py").write_text(TINY_BACKEND, encoding="utf-8")
    env = _tool_env(index, tmp_path / "home")
    pip_lock = [sys.executable, "-m", "pip", "lock", ".", "--output", "pylock.toml"]
    _run(pip_lock, seed, env)
    before = (seed / "pylock.toml").read_text()
    assert 'name = "cupy-demo"\nversion = "14.0.1"' in before
    # A newer helper-demo the intent admits appears: the lock must not take it.
    wheel = build_wheel(tmp_path / "dists" / "helper-demo" / "1.5", "helper-demo", "1.5")
    index.publish("helper-demo", wheel, "2026-06-01T00:00:00Z")
    bare, clone = _publish(seed, tmp_path)
    with _tracked(database_url, clone) as store:
        (outcome,) = asyncio.run(_propose(store, clone, index).run()).proposals
    assert outcome.state == RunState.SENT, outcome
    assert outcome.branch is not None
    assert sorted(_changed(bare, outcome.branch)) == ["pylock.toml", "pyproject.toml"]
    after = _show(bare, outcome.branch, "pylock.toml")
    assert 'name = "cupy-demo"\nversion = "14.1.1"' in after
    assert 'name = "helper-demo"\nversion = "1.0"' in after
    assert "sha256" in after
    work = tmp_path / "review"
    subprocess.run(["git", "clone", "-q", "-b", outcome.branch, str(bare), str(work)], check=True)
    held = tmp_path / "held.txt"
    held.write_text("helper-demo==1.0\n", encoding="utf-8")
    _run([*pip_lock, "--constraint", str(held)], work, env)
    assert (work / "pylock.toml").read_text() == after


def test_a_tool_missing_beside_govern_is_taken_from_the_cache_when_the_project_names_it(
    tmp_path: Path,
) -> None:
    from govern.locks.regenerate import _uv_wanted

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "0.1"\n\n[tool.uv]\nrequired-version = ">=0.5"\n',
        encoding="utf-8",
    )
    wanted = _uv_wanted(None, tmp_path, "uv.lock")
    assert not isinstance(wanted, str)
    assert wanted is not None
    assert str(wanted.accepted) == ">=0.5"
    assert "no uv is beside govern" in wanted.refusal
    # A project that names no uv: the one beside govern, or the usual "not installed".
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n', encoding="utf-8")
    assert _uv_wanted(None, tmp_path, "uv.lock") is None
    assert _uv_wanted("/usr/bin/uv", tmp_path, "uv.lock") == "/usr/bin/uv"
