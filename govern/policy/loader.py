"""Load a policy by name (``default``, ``strict``, ``library``) or from a TOML file."""

from __future__ import annotations

import difflib
from pathlib import Path
from types import MappingProxyType
from typing import Any

from govern.errors import PolicyError
from govern.exclusions.model import Kind
from govern.policy.model import Policy, RuleSettings, Severity
from govern.policy.rules import RULES
from govern.sources.reading import Unreadable, read_bounded
from govern.tomltables import InvalidToml, parse_toml

_BUILTIN = ("default", "strict", "library")


def policies_dir() -> Path:
    """Where the shipped policies are: inside the wheel, or ``policies/`` in a checkout."""
    packaged = Path(__file__).resolve().parent.parent / "_policies"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "policies"


def _severity(value: object, where: str) -> Severity:
    try:
        return Severity(str(value))
    except ValueError:
        raise PolicyError(
            f"{where}: severity {value!r} is not one of error, warning, info, off",
            tip="Set each rule to error, warning, info or off.",
        ) from None


def _locate(spec: str, base: Path) -> Path:
    if spec in _BUILTIN:
        return policies_dir() / f"{spec}.toml"
    path = Path(spec)
    if not path.is_absolute():
        path = base / path
    try:
        found = path.exists()
    except (OSError, ValueError):  # a name too long to be a path, a NUL byte
        found = False
    if not found:
        raise PolicyError(
            f"policy {spec[:80]!r} is neither a shipped policy nor a file",
            tip=f"Use one of {', '.join(_BUILTIN)}, or the path of a policy TOML file.",
        )
    return path


def _read(path: Path) -> dict[str, Any]:
    data = read_bounded(path, shown=f"policy {path}")
    if isinstance(data, Unreadable):  # a FIFO, a device, /proc/..., a huge file
        raise PolicyError(data.message, tip="Name a policy TOML file.")
    try:
        return parse_toml(data)
    except InvalidToml as exc:
        raise PolicyError(f"policy {path}: {exc}", tip="Fix the TOML syntax.") from None


_KINDS = tuple(Kind)
# The options each rule reads (govern.policy.engine), with the values they accept.
_OPTIONS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "missing-reason": {"kinds": _KINDS},
    "stale-cap": {"days": None},  # a number of days (checked below)
    "missing-link": {"kinds": _KINDS},
    "missing-review-by": {"kinds": _KINDS},
    "cap-in-library": {"groups": None},  # any pyproject group prefix
}


def _check_options(rule: str, options: dict[str, Any], where: str) -> None:
    """Reject options a rule does not read, and values it does not know."""
    known = _OPTIONS.get(rule, {})
    for name, value in options.items():
        if name not in known:
            raise PolicyError(
                f"{where}: rule {rule!r} has no option {name!r}",
                tip=f"Options of {rule}: {', '.join(known) or 'none'}.",
            )
        if name == "days":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PolicyError(f"{where}: {rule}.days must be a number of days (0 or more)")
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PolicyError(f"{where}: {rule}.{name} must be a list of strings")
        allowed = known[name]
        bad = [v for v in value if allowed is not None and v not in allowed]
        if bad:
            raise PolicyError(
                f"{where}: {rule}.{name} has unknown value(s) {', '.join(bad)}",
                tip=f"Use some of: {', '.join(allowed or ())}.",
            )


def _rule_settings(rule: str, value: object, where: str) -> RuleSettings:
    if rule not in RULES:
        close = difflib.get_close_matches(rule, RULES, n=1)
        raise PolicyError(
            f"{where}: unknown rule {rule!r}",
            tip=f"Did you mean {close[0]!r}?" if close else f"Rules: {', '.join(sorted(RULES))}.",
        )
    if isinstance(value, str):
        return RuleSettings(_severity(value, f"{where}: {rule}"))
    if isinstance(value, dict) and "severity" in value:
        options = {k: v for k, v in value.items() if k != "severity"}
        _check_options(rule, options, where)
        return RuleSettings(
            _severity(value["severity"], f"{where}: {rule}"), MappingProxyType(options)
        )
    raise PolicyError(
        f"{where}: rule {rule!r} must be a severity or a table with a severity",
        tip='Write  missing-reason = "warning"  or  missing-reason = { severity = "error" }.',
    )


def load_policy(spec: str, *, base: Path | None = None, _seen: tuple[Path, ...] = ()) -> Policy:
    """Load a shipped policy by name, or a policy file (``extends`` another policy)."""
    base = base or Path.cwd()
    path = _locate(spec, base).resolve()
    if path in _seen:
        raise PolicyError(f"policy {path} extends itself", tip="Remove the extends cycle.")
    data = _read(path)
    where = f"policy {path.name}"
    unknown = set(data) - {"name", "description", "extends", "fail-on", "rules"}
    if unknown:
        raise PolicyError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}",
            tip="Policy keys are name, description, extends, fail-on and rules.",
        )
    rules: dict[str, RuleSettings] = {
        rid: RuleSettings(rule.severity) for rid, rule in RULES.items()
    }
    fail_on = Severity.ERROR
    if "extends" in data:
        parent = load_policy(str(data["extends"]), base=path.parent, _seen=(*_seen, path))
        rules.update(parent.rules)
        fail_on = parent.fail_on
    table = data.get("rules", {})
    if not isinstance(table, dict):
        raise PolicyError(f"{where}: [rules] must be a table")
    for rule, value in table.items():
        rules[rule] = _rule_settings(rule, value, where)
    if "fail-on" in data:
        fail_on = _severity(data["fail-on"], f"{where}: fail-on")
    return Policy(
        name=str(data.get("name", path.stem)),
        description=str(data.get("description", "")),
        rules=MappingProxyType(rules),
        fail_on=fail_on,
    )
