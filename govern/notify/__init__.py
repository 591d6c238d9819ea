"""Reminders: an issue comment, a chat webhook, an email; the pending issue and the digest.

Each channel is a :class:`~govern.notify.base.Notifier` with its client given from
outside; :mod:`govern.service.remind` sends through them, once, via the outbox.
"""
