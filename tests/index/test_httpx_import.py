"""``govern.index.lean`` imports httpx without its command-line client (see its docstring)."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )


def test_httpx_loads_without_its_cli_and_its_cli_still_works() -> None:
    done = _run(
        "import sys\n"
        "import govern.index.lean, httpx\n"
        "print(sorted(m for m in ('httpx._main', 'rich', 'click') if m in sys.modules))\n"
        "print(isinstance(httpx.Client, type), httpx.__version__ != '')\n"
        "sys.argv = ['httpx', '--help']\n"
        "httpx.main()\n"
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "[]"  # nothing of the CLI loaded by the import
    assert lines[1] == "True True"
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout  # the real CLI answered the call
    assert "--help" in done.stdout


def test_an_httpx_imported_earlier_is_left_alone() -> None:
    done = _run(
        "import sys\n"
        "import httpx\n"
        "real = httpx.main\n"
        "import govern.index.lean\n"
        "print(httpx.main is real, sys.modules['httpx._main'].main is real)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]  # govern replaced nothing


def test_the_index_package_and_its_settings_load_no_http_code() -> None:
    # A poll with nothing to ask (every page still fresh) must not pay for httpx.
    done = _run(
        "import sys\n"
        "import govern.index, govern.index.settings, govern.index.model, govern.service.poll\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'h11', 'ssl')))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
