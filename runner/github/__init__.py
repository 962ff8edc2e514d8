"""GitHub as the place a run is asked from and answers to: the event and its trigger (`event.py`), who may start a
run (`gate.py`: respond's gate, and `agent-run github gate`'s before the action's run with a task), the task
built from the conversation (`conversation.py`), the sticky comment (`sticky.py`), `--review`'s findings as one
pull-request review (`review.py`, over `hunks.py`: the lines a comment may sit on), a pull request as the API
tells it (`pull.py`) and `respond.py`, which runs
the task through the one run path (`runner.run.assemble.execute`). The REST client is
`runner/report/github_api.py`, below the run: landing a run's change opens pull requests with it too.

May import `runner.run` and every package below it; imported only by `runner.cli`.
"""
