"""Placeholder: the scripted demo story is written with the run log."""
print("demo: not yet written")
