"""Fake servers on 127.0.0.1 for the tests: real sockets, real HTTP, no mocks.

- :mod:`fakes.index`: package indexes (PEP 691 / PEP 503 pages, scripted faults, pypiserver);
- :mod:`fakes.api`: the base of a vendor's REST API fake (requests recorded, faults scripted);
- :mod:`fakes.github`: GitHub's REST API (Actions, check runs);
- :mod:`fakes.ci`: Buildkite's and GitLab's REST APIs, and the kit the CI tests share;
- :mod:`fakes.forge_github`, :mod:`fakes.forge_gitlab`: pull and merge requests, issues and
  comments, as proposals use them;
- :mod:`fakes.githttp`: a git smart-HTTP remote behind basic auth (pushes with a token);
- :mod:`fakes.webhook`: a Slack-compatible incoming webhook; :mod:`fakes.smtp`: a real SMTP
  server (aiosmtpd) with STARTTLS and AUTH, for reminders;
- :mod:`fakes.sleeps`: an injected sleep that records delays (retry and backoff tests).

Imported as ``fakes.<module>``: ``tests/`` is on pytest's ``pythonpath`` and mypy's ``mypy_path``.
"""
