"""Composition above the domains: `init`, `doctor` and `doctor --repair` put the storage layer
(agentstate.store) together with the domains that keep state in it (skills registry, memory
indexes). The storage layer knows none of them."""
