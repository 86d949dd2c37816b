import Foundation
import MoodLedger

exit(BenchmarkCommand.run(Array(CommandLine.arguments.dropFirst())))
