import Foundation
import MoodLedgerCLI

let environment = ProcessInfo.processInfo.environment
exit(CLI.run(Array(CommandLine.arguments.dropFirst()), environment: environment,
             console: .standard(environment: environment)))
