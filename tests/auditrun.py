"""``govern audit`` as a library call, as most tests run it: the default policy, a fixed day."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path

from govern.audit import AuditOptions, audit
from govern.config import Config
from govern.policy.loader import load_policy
from govern.report import AuditReport

TODAY = date(2026, 12, 2)


def run_audit(
    paths: list[Path], cwd: Path, *, environ: Mapping[str, str] | None = None, **config: object
) -> AuditReport:
    """Audit ``paths`` from ``cwd`` with ``Config(**config)`` and the default policy."""
    return audit(
        paths,
        config=Config(**config),  # type: ignore[arg-type]  # each test passes Config's own keys
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY, environ=environ),
        cwd=cwd,
    )
