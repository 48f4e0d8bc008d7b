"""What goes wrong: strace kill / errno / delay injection, the in-memory filesystem and its
persistence models, the op-case catalogue, the crash explorer and the campaigns built on them.

Nothing here is imported by a plain conformance run: the runner reaches for it only when a
scenario carries a fault.
"""
