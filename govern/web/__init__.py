"""The dashboard: pages, a JSON API, webhooks and metrics (``govern serve``)."""
