"""`agentstate ui`: a local web view of one store (issue 25).

An entry point above the domains, like `integrations/`: every page calls the same domain
functions as the CLI (run log, resume and context assembly, trace, memory gates, skills
history) as the owner principal, and owns no table. Starlette serves server-rendered Jinja2
templates (autoescape on: stored text is always escaped); the browser gets one stylesheet
and one small script from this package, nothing from the network.
"""
