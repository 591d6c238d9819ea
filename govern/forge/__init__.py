"""Provenance from where the code lives: the git history behind each pin.

A *forge* is the place a project's history is kept. :mod:`govern.forge.git`
reads it from a local clone with the ``git`` command (who changed a line,
when, and in which pull request); nothing here talks to the network.
"""
