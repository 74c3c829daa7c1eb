"""The one execution layer: every command agentstate runs (exec, skill acceptance, skill
scripts) passes the `[tools]` policy and is logged here."""

from agentstate.tools.policy import PolicyDecision, check_command
from agentstate.tools.runner import ToolResult, run_tool

__all__ = ["PolicyDecision", "ToolResult", "check_command", "run_tool"]
