import Foundation
import EventLog
import MoodLedgerCLI

let environment = SystemIO.environment()
exit(CLI.run(Array(CommandLine.arguments.dropFirst()), environment: environment,
             console: .standard(environment: environment)))
