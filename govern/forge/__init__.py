"""The hosted forges proposals go to: GitHub and GitLab, their change requests and issues.

A *forge* is the place a project's history is kept; the local clone and the push are
:mod:`govern.git`'s. :mod:`govern.forge.base` is the interface to a forge's change
requests and issues; :mod:`govern.forge.github` talks to GitHub's REST API over an
injected HTTP client, and :mod:`govern.forge.remote` picks the repository and the forge
from a git remote URL.
"""
