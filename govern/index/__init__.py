"""The package index: the Simple API client (PEP 691/503), releases and candidates.

Importing this package imports nothing else: httpx loads with :mod:`govern.index.client`
(through :mod:`govern.index.lean`), so a poll with nothing to ask loads no HTTP code.
"""
