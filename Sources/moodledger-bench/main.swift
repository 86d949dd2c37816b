print("moodledger-bench: under construction")
