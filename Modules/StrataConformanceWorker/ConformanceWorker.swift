import Foundation
import StrataStoreKit

/// The second process of the conformance suite's multi-process areas, for any backend: it opens stores
/// through the factories it is given, by the store type named on its command line. A backend package
/// supplies it with one line in an executable target of its own:
///
/// ```swift
/// // Sources/my-store-worker/main.swift
/// ConformanceWorker.main([MyStoreFactory()])
/// ```
///
/// and names that executable in its ``ConformanceBackend`` (`worker: "my-store-worker"`).
///
/// Commands:
/// - `insert TYPE PATH ENTITY KEY VALUE`: opens the store of type `TYPE` at `PATH` (it must exist, with
///   history tracked), saves one `ENTITY` whose string attribute `KEY` is `VALUE` (every other attribute
///   its initial value) as author `worker`, and prints the transaction's history token.
/// - `create TYPE PATH`: opens the store of type `TYPE` at `PATH` with ``creationModel()``, creating it
///   when it is missing or unfinished, saves one `Item` whose `name` is `worker-PID`, and prints the store's
///   identifier: processes that create one store at once all print the same one.
///
/// - `migrate TYPE PATH`: opens the store of type `TYPE` at `PATH` (written with ``creationModel()``) and
///   migrates it to ``migratedModel()`` in one transaction, with a stage that sets every item's `rating`
///   to its `n` modulo 5; prints `migrated`.
///
/// - `write TYPE PATH MODE FIRST SAVES SIZE`: opens the store of type `TYPE` at `PATH` with
///   ``creationModel()`` and history tracked (creating it when missing), then makes `SAVES` writes, numbered
///   from `FIRST`: write `k` inserts `SIZE` items named `save-k-0`, `save-k-1`… with `n` = `k`, as one save
///   (`MODE` `save`) or one batch insert (`MODE` `batch`), and prints `saved k` as soon as it returned, so
///   a process killed at any moment has printed every write it made. The kill campaign
///   (``Conformance``'s `writeCrash` area, `scripts/torture kill`) checks the store against those lines.
///
/// Exit status 0 on success, 1 with one line on standard error otherwise.
public enum ConformanceWorker {
  /// Runs the command on the process's command line with `factories`, then exits.
  public static func main(_ factories: [any PersistentStoreFactory]) -> Never {
    do {
      print(try run(Array(CommandLine.arguments.dropFirst()), registry: StoreRegistry(factories)))
      exit(0)
    } catch {
      let name = (CommandLine.arguments.first as NSString?)?.lastPathComponent ?? "worker"
      FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
      exit(1)
    }
  }

  /// Runs one command and returns what it prints.
  /// - Throws: ``StoreError`` for a bad command line or what the store throws.
  public static func run(_ arguments: [String], registry: StoreRegistry) throws -> String {
    if arguments.count == 3, arguments[0] == "create" {
      return try create(StoreType(arguments[1]), at: URL(fileURLWithPath: arguments[2]), registry: registry)
    }
    if arguments.count == 7, arguments[0] == "write", let first = Int(arguments[4]), let saves = Int(arguments[5]),
      let size = Int(arguments[6])
    {
      return try write(
        StoreType(arguments[1]), at: URL(fileURLWithPath: arguments[2]), mode: arguments[3],
        writes: first..<(first + saves), size: size, registry: registry)
    }
    if arguments.count == 3, arguments[0] == "migrate" {
      return try migrate(StoreType(arguments[1]), at: URL(fileURLWithPath: arguments[2]), registry: registry)
    }
    guard arguments.count == 6, arguments[0] == "insert" else {
      throw StoreError(
        .misuse,
        "usage: insert TYPE PATH ENTITY KEY VALUE | create TYPE PATH | migrate TYPE PATH | write TYPE PATH save|batch FIRST SAVES SIZE (got \(arguments.joined(separator: " ")))"
      )
    }
    let (type, url, entityName, key, value) = (
      StoreType(arguments[1]), URL(fileURLWithPath: arguments[2]), arguments[3], arguments[4], arguments[5]
    )
    let store = try registry.openStore(type, at: url, model: nil, options: StoreOptions(tracksHistory: true))
    defer { store.close() }
    let entity = try store.model.requireEntity(entityName)
    let change = ObjectChange(
      objectID: .makeTemporary(entityName: entity.name),
      attributes: entity.attributes.map { $0.name == key ? .string(value) : $0.initialValue },
      toOne: entity.toOneRelationships.map { _ in nil })
    let result = try store.save(ChangeSet(inserted: [change], author: "worker", contextName: "worker"))
    guard let token = result.historyToken else {
      throw StoreError(.misuse, "the save recorded no history token (is history tracked?)")
    }
    return token.description
  }

  /// The model of the `create` command: one entity `Item` with a unique string `name` and an indexed
  /// integer `n`.
  public static func creationModel() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Item",
        attributes: [
          AttributeDescription(name: "name", type: .string),
          AttributeDescription(name: "n", type: .int64, isIndexed: true),
        ],
        uniquenessConstraints: [["name"]])
    ])
  }

  private static func create(_ type: StoreType, at url: URL, registry: StoreRegistry) throws -> String {
    let store = try registry.openStore(type, at: url, model: try creationModel(), options: StoreOptions())
    defer { store.close() }
    let pid = Int64(ProcessInfo.processInfo.processIdentifier)
    let item = ObjectChange(
      objectID: .makeTemporary(entityName: "Item"), attributes: [.string("worker-\(pid)"), .int(pid)], toOne: [])
    _ = try store.save(ChangeSet(inserted: [item], author: "worker", contextName: "worker"))
    return store.identifier
  }

  /// The name the `write` command gives the `index`th item of write `number`.
  public static func writtenItemName(write number: Int, index: Int) -> String { "save-\(number)-\(index)" }

  private static func write(
    _ type: StoreType, at url: URL, mode: String, writes: Range<Int>, size: Int, registry: StoreRegistry
  ) throws -> String {
    guard mode == "save" || mode == "batch", size > 0 else {
      throw StoreError(.misuse, "write: the mode is save or batch and the size positive (got \(mode) \(size))")
    }
    let store = try registry.openStore(type, at: url, model: try creationModel(), options: StoreOptions(tracksHistory: true))
    defer { store.close() }
    for number in writes {
      let names = (0..<size).map { writtenItemName(write: number, index: $0) }
      if mode == "save" {
        let items = names.map { name in
          ObjectChange(objectID: .makeTemporary(entityName: "Item"), attributes: [.string(name), .int(Int64(number))], toOne: [])
        }
        _ = try store.save(ChangeSet(inserted: items, author: "worker", contextName: "worker"))
      } else {
        let rows = names.map { name -> [String: Value] in ["name": .string(name), "n": .int(Int64(number))] }
        _ = try store.execute(
          .insert(BatchInsertDescription(entityName: "Item", objects: rows)), author: "worker", contextName: "worker")
      }
      // Unbuffered: the line is out before the next write starts, whenever the process is killed.
      FileHandle.standardOutput.write(Data("saved \(number)\n".utf8))
    }
    return "done"
  }

  /// The model the `migrate` command migrates to: ``creationModel()`` with `n` widened to a double and
  /// renamed `number`, and a `rating` (default 0) that the migration's stage fills.
  public static func migratedModel() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Item",
        attributes: [
          AttributeDescription(name: "name", type: .string),
          AttributeDescription(name: "number", type: .double, isIndexed: true, renamingIdentifier: "n"),
          AttributeDescription(name: "rating", type: .int16, defaultValue: 0),
        ],
        uniquenessConstraints: [["name"]])
    ])
  }

  /// The rating the `migrate` command's stage gives an item numbered `n`.
  public static func migratedRating(_ n: Double) -> Int64 { Int64(n.rounded()) % 5 }

  private static func migrate(_ type: StoreType, at url: URL, registry: StoreRegistry) throws -> String {
    let store = try registry.openStore(type, at: url, model: try creationModel(), options: StoreOptions(tracksHistory: true))
    let step = MigrationStep(
      try ModelMigration(from: store.model, to: try migratedModel()),
      didMigrate: { store in
        guard case .snapshots(let items) = try store.fetch(FetchDescription(entityName: "Item"), generation: nil) else { return }
        let updates = items.map { item -> ObjectChange in
          guard case .double(let number) = item.attributes[1] else {
            return ObjectChange(objectID: item.objectID, attributes: item.attributes, toOne: [])
          }
          return ObjectChange(
            objectID: item.objectID, attributes: [item.attributes[0], item.attributes[1], .int(migratedRating(number))],
            toOne: [], changedKeys: ["rating"])
        }
        _ = try store.save(ChangeSet(updated: updates))
      })
    let migrated: any PersistentStore
    do {
      migrated = try store.migrated(along: [step], reporting: nil)
    } catch {
      store.close()
      throw error
    }
    migrated.close()
    return "migrated"
  }
}
