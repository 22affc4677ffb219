import ArgumentParser
import StrataCLI
import StrataStoreKit

struct StrataCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "strata",
    abstract: "Inspect a Strata store without the app's code: the model is read from the store itself.",
    discussion: "Stores are opened read-only: strata never changes a store (copy writes a new one).\n\n" + exitStatusHelp,
    version: strataVersion,
    subcommands: [InfoCommand.self, FetchCommand.self, HistoryCommand.self, CopyCommand.self])

  static func main() { mainReportingUsageErrors() }
}

/// The options every subcommand shares: where the store is and which backend reads it.
struct StoreLocation: ParsableArguments {
  @Argument(
    help: ArgumentHelp(
      "The store file (a directory for lmdb; a postgresql:// URI for postgres) to open. It must exist: strata never creates a store.",
      valueName: "path"))
  var path: String

  @Option(
    name: .long,
    help: ArgumentHelp(
      "The store backend that reads the path: sqlite, lmdb or postgres. Default: the one whose store the path holds (an SQLite file by its header, an LMDB environment by its data.mdb, postgres for a postgresql:// or postgres:// URI).",
      valueName: "type"))
  var store: StoreType?

  func validate() throws {
    guard let store else { return }
    try validateBackend(store)
  }
}

/// Refuses, as a usage error (exit 64), a backend name the tool does not know.
func validateBackend(_ type: StoreType) throws {
  do {
    _ = try StoreFlags.backends.backend(for: type)
  } catch let error as StoreError {
    throw ValidationError(error.message)
  }
}
