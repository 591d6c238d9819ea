"""The REST seam shared by CI providers, forges and notifiers.

Notes: docs/internals.md#http.
"""
