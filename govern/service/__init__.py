"""The workflow: track, poll, verify, propose (no I/O details of its own)."""
