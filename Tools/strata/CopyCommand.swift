import ArgumentParser
import Foundation
import StrataCLI
import StrataStoreKit

struct CopyCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "copy",
    abstract: "Copy every object of a store into a new store of another (or the same) backend.",
    discussion:
      "The source is opened read-only; the destination must not exist yet. The copy is written beside it and renamed into place once whole, so the destination holds a complete store or nothing. Objects get new IDs in the new store; persistent history is not copied.\n\nFor --to postgres the destination is a URI (postgresql://user@host/database/schema): its schema must hold no store; the store is created there, and dropped again when the copy fails."
  )

  @OptionGroup var location: StoreLocation

  @Argument(
    help: ArgumentHelp(
      "Where to create the new store (a directory for lmdb, a postgresql:// URI for postgres).", valueName: "destination"))
  var destination: String

  @Option(name: .customLong("to"), help: ArgumentHelp("The new store's backend: sqlite, lmdb or postgres.", valueName: "type"))
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
      if let server = URL(string: destination), let scheme = server.scheme, scheme != "file" {
        let report = try copyToServer(server, factory: factory)
        print(
          json
            ? try jsonString(report)
            : "Copied \(report.objects) objects from \(report.source) (\(report.sourceType)) to \(report.destination) (\(report.destinationType))."
        )
        return
      }
      let path = URL(fileURLWithPath: (destination as NSString).expandingTildeInPath).standardizedFileURL.path
      guard !path.isEmpty else { throw ToolError("the destination path is empty") }
      guard try !StorePath.checkUsable(path) else {
        throw ToolError("\(path) already exists: strata copies only into a new store")
      }
      let support = ExternalDataDirectory.supportDirectory(of: URL(fileURLWithPath: path)).path
      guard !FileManager.default.fileExists(atPath: support) else {
        throw ToolError("\(support) already exists (left by another store?): remove it or copy to another path")
      }
      let directory = (path as NSString).deletingLastPathComponent
      if ReadOnlyMedia.contains(directory) {
        throw ToolError("cannot copy to \(path): \(directory) is on a read-only file system")
      }
      if FileManager.default.fileExists(atPath: directory) && access(directory, W_OK) != 0 {
        throw ToolError("cannot copy to \(path): \(directory) is not writable")
      }
      let report = try location.withStore { source in
        // The copy is written beside the destination and renamed into place when whole, so the
        // destination path holds a complete store or nothing.
        let staging = URL(fileURLWithPath: path).deletingLastPathComponent()
          .appending(path: ".\(URL(fileURLWithPath: path).lastPathComponent).partial-\(UUID().uuidString)").path
        func removeStaging() {
          for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: staging + suffix) }
          try? ExternalDataDirectory.destroy(beside: URL(fileURLWithPath: staging))
        }
        do {
          let created = try factory.openStore(at: URL(fileURLWithPath: staging), model: source.model, options: StoreOptions())
          let objects: Int
          do {
            objects = try StoreCopy.copy(from: source, to: created, author: "strata copy", progress: terminalProgress())
          } catch {
            created.close()
            throw error
          }
          created.close()
          // Closing the last connection checkpoints an SQLite copy into its file; a write-ahead log left
          // behind would not follow the file's rename.
          let log = (try? FileManager.default.attributesOfItem(atPath: staging + "-wal")[.size] as? Int) ?? nil
          guard (log ?? 0) == 0 else { throw ToolError("the copy at \(staging) could not be checkpointed into its file") }
          try? FileManager.default.removeItem(atPath: staging + "-wal")
          try? FileManager.default.removeItem(atPath: staging + "-shm")
          // The values kept out of the rows first, so that the store never stands without them.
          let stagedSupport = ExternalDataDirectory.supportDirectory(of: URL(fileURLWithPath: staging)).path
          let hasSupport = FileManager.default.fileExists(atPath: stagedSupport)
          guard !hasSupport || rename(stagedSupport, support) == 0 else {
            throw ToolError("cannot move the copy's external data into place at \(support): \(String(cString: strerror(errno)))")
          }
          guard rename(staging, path) == 0 else {
            let reason = String(cString: strerror(errno))
            if hasSupport { try? FileManager.default.removeItem(atPath: support) }
            throw ToolError("cannot move the copy into place at \(path): \(reason)")
          }
          return Report(
            source: source.url?.path ?? location.path, sourceType: source.storeType.rawValue, destination: path,
            destinationType: destinationType.rawValue, objects: objects)
        } catch {
          removeStaging()
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

  /// Copies into a store at a server location (a PostgreSQL schema), which must hold no store yet; a
  /// store the copy created is destroyed again when the copy fails.
  private func copyToServer(_ url: URL, factory: any PersistentStoreFactory) throws -> Report {
    guard factory.recognizesStore(at: url) else {
      throw ToolError("\(destination) is not a location of the \(destinationType) store")
    }
    do {
      let existing = try factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
      existing.close()
      throw ToolError("\(destination) already holds a store: strata copies only into a new store")
    } catch let error as StoreError where error.code == .notFound {
      // No store there yet (nothing was created by looking).
    }
    return try location.withStore { source in
      let created = try factory.openStore(at: url, model: source.model, options: StoreOptions())
      do {
        let objects = try StoreCopy.copy(from: source, to: created, author: "strata copy", progress: terminalProgress())
        created.close()
        return Report(
          source: source.url?.path ?? location.path, sourceType: source.storeType.rawValue, destination: destination,
          destinationType: destinationType.rawValue, objects: objects)
      } catch {
        created.close()
        try? factory.destroyStore(at: url)
        throw error
      }
    }
  }
}
