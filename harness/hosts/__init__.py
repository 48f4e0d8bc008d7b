"""The real hosts (issue 23): pi and OpenCode run headless with a memory extension loaded,
against a scripted model of ours on loopback, judged against S-INJECT and the store.

``fake_model`` plays a script and records what the host showed the model; ``cache`` finds
(and ``make hosts`` installs) the pinned hosts; ``pi`` and ``opencode`` launch them;
``script`` types a host scenario; ``expected`` runs the reference's session model on the
same script; ``run`` plays a scenario on a host and judges it.
"""
