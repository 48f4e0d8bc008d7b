"""Drivers: everything that starts an implementation and speaks the peer protocol to it."""
