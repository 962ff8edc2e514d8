"""Consumers of the event stream and the run's readable outputs: the stderr progress lines, the
summary fold, the transcript, JUnit, GitHub Actions reporting (annotations, outputs, step summary),
stream deltas, the workspace's change tracking, and the GitHub REST client (`github_api.py`: `github respond`
and landing a run's change). `markdown.py` holds the Markdown both the
transcript and the step summary write.

Beside `runner.guards` and `runner.context`; may import model and below.
"""
