"""Experimental APIs: `host_callback` (host taps)."""
