"""The history checker: Jepsen-style histories, a generic linearizability search and its fast path, the store's model."""
