"""Commands of this domain (to be filled in)."""
