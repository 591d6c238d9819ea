"""The command line's wiring: every command registered in one place, no CLI module reaching
into another's private names, and each command's stack loaded only when it runs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import typer

import govern.cli
import govern.cli.app
from govern.cli.app import COMMANDS, build

_CLI = Path(govern.cli.__file__).parent
GROUPS = ("config", "db")  # the commands that are groups of subcommands


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for each ``from module import name`` anywhere in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


@pytest.mark.parametrize("path", sorted(_CLI.glob("*.py")), ids=lambda p: p.name)
def test_no_cli_module_takes_a_private_name_or_the_app(path: Path) -> None:
    for module, name in _imports(path):
        if module.startswith("govern."):
            assert not name.startswith("_"), f"{path.name} imports {module}.{name}"
        if path.name not in ("app.py", "__init__.py"):  # app.py registers; main() runs it
            assert module != "govern.cli.app", path.name


def test_every_command_is_registered_in_app_py() -> None:
    app = build()
    names = {
        command.name or getattr(command.callback, "__name__", "")
        for command in app.registered_commands
    }
    assert names == {
        "demo",
        "init",
        "audit",
        "poll",
        "daemon",
        "rules",
        "track",
        "untrack",
        "status",
        "history",
        "verify",
        "propose",
        "digest",
        "serve",
        "dashboard",
        "report",
    }
    assert [group.name for group in app.registered_groups] == list(GROUPS)


def test_a_run_that_names_its_command_registers_only_that_one() -> None:
    script = (
        "import sys\nfrom govern.cli.app import build\nbuild('audit')\n"
        "print(*sorted(m for m in sys.modules if m.startswith('govern.cli.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    others = {f"govern.cli.{module}" for module, _ in COMMANDS.values()} - {"govern.cli.audit"}
    assert "govern.cli.audit" in loaded
    assert not others & set(loaded)  # the other commands' modules are not even imported
    one = build("audit")
    assert [c.name for c in one.registered_commands] == ["audit"]
    assert one.registered_groups == []
    db = build("db")
    assert db.registered_commands == []
    assert [g.name for g in db.registered_groups] == ["db"]
    assert len(build().registered_commands) == len(COMMANDS) - len(GROUPS)


@pytest.mark.parametrize(
    ("argv", "registered"),
    [
        (["--debug", "audit", "--help"], ["audit"]),
        (["status", "--help"], ["status"]),
        (["--help"], [name for name in COMMANDS if name not in GROUPS]),
        (["--help", "audit"], [name for name in COMMANDS if name not in GROUPS]),
        (["nosuch"], [name for name in COMMANDS if name not in GROUPS]),
    ],
)
def test_dispatch_builds_the_app_for_the_named_command(
    argv: list[str], registered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[typer.Typer] = []

    def spy(only: str | None = None) -> typer.Typer:
        built.append(build(only))
        return built[-1]

    monkeypatch.setattr(govern.cli.app, "build", spy)
    with pytest.raises(SystemExit):
        govern.cli.main(argv)
    assert [c.name for c in built[0].registered_commands] == registered
