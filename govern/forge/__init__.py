"""Where the code lives: the git history behind each pin, and the forge proposals go to.

A *forge* is the place a project's history is kept. :mod:`govern.forge.git` reads it
from a local clone with the ``git`` command (who changed a line, when, and in which pull
request). :mod:`govern.forge.base` is the interface to a forge's change requests and
issues; :mod:`govern.forge.github` talks to GitHub's REST API over an injected HTTP
client, and :mod:`govern.forge.remote` picks the repository and the forge from a git
remote URL.
"""
