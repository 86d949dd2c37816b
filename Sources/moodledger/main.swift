print("moodledger: under construction")
