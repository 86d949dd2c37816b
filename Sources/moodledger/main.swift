import Foundation
import MoodLedgerCLI
import Platform

let environment = SystemIO.environment()
exit(
    CLI.run(
        Array(CommandLine.arguments.dropFirst()), environment: environment,
        console: .standard(environment: environment)))
