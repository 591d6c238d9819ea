"""The ``github-actions`` provider in checks mode: the check runs of a ref, started by others.

``mode = "checks"`` starts nothing: ``ref`` is a template (``"renovate/{package}-{version}"``)
naming a branch or pull request whose checks some other automation runs, and the trial's
run is ``checks:<ref>``, read from that ref's check runs
(:meth:`~govern.ci.github.GitHubActions.checks_status`).
"""

from __future__ import annotations

from govern.ci import options as opts
from govern.ci.base import RunRef, Started, Trial
from govern.ci.github import CHECKS, GitHubActions
from govern.errors import ConfigError
from govern.tomltables import show


class GitHubChecks(GitHubActions):
    """Verify a candidate by the check runs of its own ref (a template, filled in)."""

    mode = "checks"

    async def start(self, trial: Trial) -> Started:
        """Nothing is started: the run is the ref the template names."""
        return Started(RunRef(f"{CHECKS}{self.checks_ref(trial)}"))

    @classmethod
    def check_ref(cls, ref: str, name: str) -> None:
        """``ref`` names each candidate's own ref: a template with ``{version}``."""
        _check_template(ref, name)

    def checks_ref(self, trial: Trial) -> str:
        """The ref whose check runs try the trial: the template, filled in."""
        return self.ref.format(package=trial.package, version=str(trial.version))


def _check_template(ref: str, name: str) -> None:
    """In checks mode ``ref`` names each candidate's own ref: ``{version}`` is needed."""
    try:
        ref.format(package="pkg", version="1.0")
    except (KeyError, IndexError, ValueError):
        raise ConfigError(
            f"{opts.where(name)}: ref {show(ref)} may only use the placeholders"
            " {package} and {version}",
            tip='Write ref = "renovate/{package}-{version}".',
        ) from None
    if "{version}" not in ref:
        raise ConfigError(
            f"{opts.where(name)}: in checks mode ref must contain {{version}}, so that each"
            f" candidate has its own checks (not {show(ref)})",
            tip='Write ref = "renovate/{package}-{version}".',
        )
