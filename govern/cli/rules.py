"""``govern rules``: every rule, its severity under a policy, and its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from govern.policy.loader import load_policy
from govern.policy.rules import RULES


def rules(
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="default, strict, library, or a policy file.")
    ] = "default",
) -> None:
    """List the rules with the severity POLICY gives each, and how to fix a finding."""
    chosen = load_policy(policy, base=Path.cwd())
    typer.echo(f"policy {chosen.name}: {chosen.description} (fails on {chosen.fail_on})")
    width = max(len(rule) for rule in RULES)
    for rule_id in sorted(RULES):
        rule = RULES[rule_id]
        severity = chosen.severity(rule_id)
        typer.echo(f"{rule_id:<{width}}  {severity:<7}  {rule.summary}")
        typer.echo(f"{'':<{width}}  {'':<7}  fix: {rule.fix}")
