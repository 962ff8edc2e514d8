"""Consumers of the event stream: the stderr progress lines and the summary."""
