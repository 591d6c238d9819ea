"""``govern daemon``: the scheduled service (APScheduler), polling as often as it is told.

Three jobs, each on its own interval, run one at a time (they share the store):

- **sync** re-tracks the repositories it was given (as ``govern track DIR`` does; a
  repository whose files did not change costs a hash of them);
- **poll** asks the index about every tracked exclusion (as ``govern poll``);
- **verify** starts CI runs for new candidates and collects the results of runs still
  going (as ``govern verify`` without ``--wait``), when a CI provider is configured.

At start the daemon runs each job once, in that order; then each runs on its interval,
with a little jitter so that many daemons do not ask the index at the same second. One
daemon per store (:mod:`govern.daemon.lock`), checked before each job with the store's
schema revision. Each job, and that check, runs in a thread of its own
(:func:`~govern.daemon.jobs.in_thread`), so the event loop hears signals while they
wait: SIGTERM or SIGINT lets the running job finish (within the grace period), then
stops; a second signal stops at once.
"""

from __future__ import annotations
