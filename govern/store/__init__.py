"""The store: SQLModel tables, the engine and sessions, and the queries the commands need.

Nothing here is imported by ``govern audit``; the database stack loads only for the
commands that use it.
"""
