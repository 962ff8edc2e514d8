"""The OS sandbox every process of a run starts in (bubblewrap, an egress proxy with the policy's
network allow-list), and `session.start_sandbox`, which opens it for a run.

May import the engine (the run's recording and call hooks decide network requests) and everything below.
"""
