from agentstate.entry import main

main()
