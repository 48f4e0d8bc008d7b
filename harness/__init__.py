"""memconform's harness: drives implementations of the memory store and attacks them."""
