from turnout.entry import main

main()
