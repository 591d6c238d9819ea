"""Shared fixtures: process-wide state is restored after every test."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# Variables that change govern's behaviour; tests set what they need explicitly.
_ENV = ("NO_COLOR", "FORCE_COLOR", "GOVERN_DATABASE_URL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


@pytest.fixture(autouse=True)
def _restore_process_state() -> Iterator[None]:
    """Reset the CLI flags, the collector, the environment and the cwd after each test."""
    from govern.cli import STATE

    saved_env = {name: os.environ.get(name) for name in _ENV}
    saved_cwd = os.getcwd()
    saved_debug = STATE.debug
    saved_fast_exit = STATE.fast_exit
    saved_gc = gc.isenabled()
    try:
        for name in _ENV:
            os.environ.pop(name, None)
        yield
    finally:
        STATE.debug = saved_debug
        STATE.fast_exit = saved_fast_exit
        if saved_gc:
            gc.enable()
        else:
            gc.disable()
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def data() -> Path:
    """The directory of committed test data (each folder has a PROVENANCE.md)."""
    return DATA
