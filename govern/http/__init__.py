"""The REST seam shared by CI providers, forges and notifiers.

Notes: docs/internals.md, govern/http/__init__.py.
"""
