"""CI providers behind one interface: command, GitHub Actions, Buildkite, GitLab."""
