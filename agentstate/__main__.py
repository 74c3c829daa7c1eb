from agentstate.cli import main

main()
