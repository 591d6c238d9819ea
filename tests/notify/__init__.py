"""Tests of reminders (govern/notify, service/remind.py); a package so that its conftest has a
module name of its own."""
