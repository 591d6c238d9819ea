"""Real, tiny distributions for index tests: govern's own writer (govern.demo.wheels)."""

from govern.demo.wheels import build_sdist, build_wheel, dist_name, metadata, sha256

__all__ = ["build_sdist", "build_wheel", "dist_name", "metadata", "sha256"]
