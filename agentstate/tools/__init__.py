"""The one execution layer: every command agentstate runs (exec, skill acceptance, skill
scripts) passes the `[tools]` policy and is logged here."""

# Nothing is imported here: `agentstate.tools.excerpt` is used by every hook, which must not
# pay for loading the policy and the runner (tools.policy / tools.runner are imported by name).
