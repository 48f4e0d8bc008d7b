"""The writers engine: real writer processes on one store, availability, carry-over as a racing op, the lock matrix."""
