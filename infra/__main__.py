from infra.entry import main

main()
