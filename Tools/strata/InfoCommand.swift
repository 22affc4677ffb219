import ArgumentParser
import StrataCLI
import StrataStoreKit

struct InfoCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "info",
    abstract: "Describe a store: its type, identifier, model fingerprint, entities and row counts.")

  @OptionGroup var location: StoreLocation

  @Flag(help: "Print one JSON object instead of text.")
  var json = false

  func run() throws {
    try runReportingErrors(tool: "strata") {
      let report = try location.withStore { try StoreReport(store: $0) }
      print(json ? try jsonString(report) : report.text)
    }
  }
}
