"""The ``github-actions`` provider in dispatch mode (the default): one workflow run per trial.

Notes: docs/internals.md#ci.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from govern.ci.base import RunRef, Started, Trial
from govern.ci.github import DISPATCHED, GitHubActions
from govern.ci.hosted import optional_str, trial_fields
from govern.errors import CIError

log = logging.getLogger(__name__)

_LOOKUP_WAITS = (1.0, 2.0, 3.0, 4.0, 5.0)  # seconds before each look for a dispatched run
_CLOCK_SKEW = timedelta(minutes=2)  # the created>= filter allows for clocks that disagree
# An older server refuses the unknown return_run_details key: 422, or 400 on some.
_REFUSED_KEY = frozenset({400, 422})


class GitHubDispatch(GitHubActions):
    """Verify a candidate by dispatching the configured workflow on branch ``ref``."""

    mode = "dispatch"
    workflow_required = True
    default_ref = "main"
    _ask_run_details = True  # until the server rejects return_run_details

    async def start(self, trial: Trial) -> Started:
        """Dispatch the workflow for the trial and find the run it started."""
        since = self._clock() - _CLOCK_SKEW
        ref = await self._dispatch(trial)
        if ref is not None:
            log.debug("%s: dispatched %s as run %s", self.name, trial.requirement, ref.run_id)
            return Started(ref)
        for wait in _LOOKUP_WAITS:
            await self._sleep(wait)
            run = await self.find_run(trial.correlation_id, since)
            if run is not None:
                found = self.run_ref(run)
                log.debug("%s: %s is run %s", self.name, trial.correlation_id, found.run_id)
                return Started(found)
        log.info(
            "%s: GitHub does not list the run dispatched as %s yet; it is looked up again",
            self.name,
            trial.correlation_id,
        )
        return Started(RunRef(f"{DISPATCHED}{trial.correlation_id}"))

    def inputs(self, trial: Trial) -> dict[str, str]:
        """The workflow_dispatch inputs for a trial (all strings, as GitHub passes them)."""
        return trial_fields(trial)

    async def _dispatch(self, trial: Trial) -> RunRef | None:
        """Send the dispatch; the run when GitHub says which it is, else None. A workflow
        that does not declare an input govern sends refuses the dispatch (no run): the
        error says which inputs to declare."""
        try:
            return await self._send(trial)
        except CIError as exc:
            if exc.status != 422 or "Unexpected inputs" not in exc.message:
                raise
            raise CIError(
                exc.message,
                tip="Declare every input govern sends in the workflow's workflow_dispatch: "
                f"{', '.join(sorted(self.inputs(trial)))} (reproducer and pins are optional "
                "strings: see docs/commands/verify.md).",
                status=exc.status,
            ) from None

    async def _send(self, trial: Trial) -> RunRef | None:
        """Send the dispatch; the run when GitHub says which it is, else None."""
        body: dict[str, Any] = {"ref": self.ref, "inputs": self.inputs(trial)}
        path = self.workflow_path("dispatches")
        api = await self.client()
        # A dispatch is not idempotent: an answer lost to a 5xx or a time-out may still have
        # started a run, so it is sent once; the service tries again with a new attempt id.
        # A rate limit refused it (no run): the client waits a short one out, sends again.
        if self._ask_run_details:
            try:
                answer = await api.json(
                    "POST", path, json_body={**body, "return_run_details": True}, attempts=1
                )
            except CIError as exc:
                # An older server refuses the unknown key: no run was started.
                if exc.status not in _REFUSED_KEY or "return_run_details" not in exc.message:
                    raise
                self._ask_run_details = False
                log.info(
                    "%s: the server does not return run details; runs are looked up", self.name
                )
            else:
                return _details_ref(answer)
        await api.json("POST", path, json_body=body, attempts=1)
        return None


def _details_ref(answer: Any) -> RunRef | None:
    """The run from a dispatch's ``return_run_details`` answer (None for a 204)."""
    if not isinstance(answer, dict):
        return None
    run_id = answer.get("workflow_run_id")
    if not isinstance(run_id, int) or isinstance(run_id, bool) or run_id <= 0:
        return None
    return RunRef(str(run_id), url=optional_str(answer.get("html_url")))
