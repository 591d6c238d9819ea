"""The REST seam shared by CI providers, forges and notifiers.

``client.py``: :class:`~govern.http.client.ApiClient`, one vendor's REST API with one
credential, raising in its caller's error family (:class:`govern.errors.ErrorFamily`);
``retry.py``: backoff and servers' "wait" headers; ``pages.py``: listings followed page by
page; ``body.py``: answers read within bounds and a deadline; ``github.py`` and
``gitlab.py``: each vendor's API built once (base URL, headers, API version, token);
``github_app.py``: a GitHub App's installation tokens (needs the ``github-app`` extra).

The package index's client (:mod:`govern.index.client`) is not built on ``ApiClient``: it
speaks PEP 691/503 with conditional requests and retries of its own, and shares only
``body.py`` and ``retry.py``.
"""
