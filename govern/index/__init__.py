"""The package index: the Simple API client (PEP 691/503), releases and candidates."""
