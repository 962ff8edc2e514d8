"""Models the loop can ask: an OpenAI-compatible endpoint, or a recorded run."""
