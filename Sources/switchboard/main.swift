import Foundation

let exitCode = await CommandLineTool.run(Array(CommandLine.arguments.dropFirst()))
exit(exitCode)
