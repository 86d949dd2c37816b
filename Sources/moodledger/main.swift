import Foundation
import MoodLedgerCLI
import Platform

// A closed pipe on stdout is a failed write the command answers (`Specs/cli.md`), not a signal that kills it after
// it committed.
Socket.ignoreSIGPIPE()
let environment = SystemIO.environment()
exit(
    CLI.run(
        Array(CommandLine.arguments.dropFirst()), environment: environment,
        console: .standard(environment: environment)))
