import ArgumentParser
import Foundation
import StrataCLI
import StrataStoreKit

struct CopyCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "copy",
    abstract: "Copy every object of a store into a new store of another (or the same) backend.",
    discussion:
      "The source is opened read-only; the destination must not exist yet. Objects get new IDs in the new store; persistent history is not copied. When the copy fails, nothing is left at the destination."
  )

  @OptionGroup var location: StoreLocation

  @Argument(help: ArgumentHelp("Where to create the new store (a directory for lmdb).", valueName: "destination"))
  var destination: String

  @Option(name: .customLong("to"), help: ArgumentHelp("The new store's backend: sqlite or lmdb.", valueName: "type"))
  var destinationType: StoreType

  @Flag(help: "Print one JSON object instead of text.")
  var json = false

  struct Report: Encodable {
    var source: String
    var sourceType: String
    var destination: String
    var destinationType: String
    var objects: Int
  }

  func validate() throws { try validateBackend(destinationType) }

  func run() throws {
    try runReportingErrors(tool: "strata") {
      let factory = try StoreFlags.backends.storeFactory(for: destinationType)
      guard factory.requiresLocation else {
        throw ToolError("the \(destinationType) store keeps nothing in a file: there is nothing to copy into")
      }
      let path = URL(fileURLWithPath: (destination as NSString).expandingTildeInPath).standardizedFileURL.path
      guard !path.isEmpty else { throw ToolError("the destination path is empty") }
      guard !FileManager.default.fileExists(atPath: path) else {
        throw ToolError("\(path) already exists: strata copies only into a new store")
      }
      let report = try location.withStore { source in
        let url = URL(fileURLWithPath: path)
        let created = try factory.openStore(at: url, model: source.model, options: StoreOptions())
        do {
          let objects = try StoreCopy.copy(from: source, to: created, author: "strata copy", progress: terminalProgress())
          created.close()
          return Report(
            source: source.url?.path ?? location.path, sourceType: source.storeType.rawValue, destination: path,
            destinationType: destinationType.rawValue, objects: objects)
        } catch {
          created.close()
          try? FileManager.default.removeItem(atPath: path)
          for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
          throw error
        }
      }
      print(
        json
          ? try jsonString(report)
          : "Copied \(report.objects) objects from \(report.source) (\(report.sourceType)) to \(report.destination) (\(report.destinationType))."
      )
    }
  }
}
