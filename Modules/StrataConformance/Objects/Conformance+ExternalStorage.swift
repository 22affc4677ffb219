import Foundation
import Strata
import StrataStoreKit
import Testing

/// The external-storage area's store: films with a unique title, a poster that allows external storage
/// (`AttributeDescription.allowsExternalBinaryDataStorage`) and a note that does not. On a backend whose
/// factory keeps large values out of its rows (an ``ExternalDataStore``) the cases also look at what its
/// storage holds; on the others (memory) they check that every value reads back whole.
final class ExternalStorageStore {
  static func model(external: Bool = true) throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Film",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "poster", type: .data, isOptional: true, allowsExternalBinaryDataStorage: external),
          AttributeDescription(name: "note", type: .data, isOptional: true),
        ], uniquenessConstraints: [["title"]])
    ])
  }

  /// `count` bytes of a pattern that `seed` shifts, so that two values differ everywhere.
  static func bytes(_ count: Int, seed: UInt8) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
  }

  static let large = AttributeDescription.externalStorageThreshold + 4099

  let backend: ConformanceBackend
  let registry: StoreRegistry
  let description: StoreDescription
  let container: PersistentContainer

  init(_ backend: ConformanceBackend, external: Bool = true, at url: URL? = nil) throws {
    self.backend = backend
    registry = StoreRegistry([backend.factory])
    description = StoreDescription(type: backend.factory.storeType, url: try url ?? backend.makeLocation())
    container = try PersistentContainer.loaded(
      name: "Films", model: try Self.model(external: external), types: [], store: description, registry: registry)
  }

  var store: ExternalDataStore? { container.persistentStore as? ExternalDataStore }

  /// The names of the values kept out of the rows, `[]` on a backend that keeps none.
  func storedNames() throws -> Set<UUID> { Set(try store?.storage.names().keys.map { $0 } ?? []) }

  @discardableResult
  func insert(_ title: String, poster: Data?, note: Data? = nil) throws -> ManagedObject {
    let context = container.viewContext
    let film = try context.insertObject(entityName: "Film")
    try film.setValue(title, forKey: "title")
    try film.setValue(poster, forKey: "poster")
    try film.setValue(note, forKey: "note")
    try context.save()
    return film
  }

  /// The poster of `title` as a context that read nothing before sees it.
  func poster(_ title: String, in container: PersistentContainer? = nil) throws -> Data? {
    let context = (container ?? self.container).newBackgroundContext()
    return try context.performAndWait {
      let request = FetchRequest<ManagedObject>(entityName: "Film", predicate: try QueryPredicate(format: "title == %@", title))
      return try context.fetch(request).first?.value(forKey: "poster") as? Data
    }
  }

  /// What the row of `title` holds for the poster, read from the wrapped store (a reference for a value
  /// kept out of line).
  func rawPoster(_ title: String) throws -> Data? {
    guard let store else { return nil }
    let request = FetchDescription(
      entityName: "Film", predicate: try QueryPredicate(format: "title == %@", title))
    guard case .snapshots(let rows) = try store.inner.fetch(request, generation: nil), let row = rows.first else { return nil }
    guard case .data(let data) = row.attributes[1] else { return nil }
    return data
  }
}

/// Attributes that allow external storage: large values round trip byte for byte and leave the rows,
/// small ones stay in them; a replaced or deleted value is removed, a failed save leaves none, a value no
/// row names is removed when the store opens, and copies and migrations carry the values.
enum ExternalStorageCases {
  static func largeValuesRoundTripAndSmallOnesStayInline(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let poster = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 1)
    let small = ExternalStorageStore.bytes(1000, seed: 2)
    try s.insert("Alien", poster: poster, note: ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 3))
    try s.insert("Brazil", poster: small)
    try s.insert("Cube", poster: nil)
    #expect(try s.poster("Alien") == poster)
    #expect(try s.poster("Brazil") == small)
    #expect(try s.poster("Cube") == nil)
    if s.store != nil {
      #expect(try s.storedNames().count == 1, "only the large poster leaves its row (the note does not allow it)")
      #expect(try s.rawPoster("Alien").flatMap(ExternalDataReference.decode) != nil)
      #expect(try s.rawPoster("Brazil") == small)
    }
    // A store opened again reads the bytes back.
    if let url = s.description.url {
      s.container.close()
      let again = try ExternalStorageStore(backend, at: url)
      defer { again.container.close() }
      #expect(try again.poster("Alien") == poster)
    }
  }

  static func replacedAndDeletedValuesAreRemoved(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let film = try s.insert("Alien", poster: ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 1))
    let first = try s.storedNames()
    let context = s.container.viewContext
    // A change to another attribute keeps the stored value.
    try film.setValue(ExternalStorageStore.bytes(10, seed: 9), forKey: "note")
    try context.save()
    #expect(try s.storedNames() == first)
    let second = ExternalStorageStore.bytes(ExternalStorageStore.large + 1, seed: 2)
    try film.setValue(second, forKey: "poster")
    try context.save()
    #expect(try s.poster("Alien") == second)
    if s.store != nil {
      let names = try s.storedNames()
      #expect(names.count == 1 && names != first, "the replaced value is removed, the new one stored")
    }
    try film.setValue(ExternalStorageStore.bytes(10, seed: 3), forKey: "poster")
    try context.save()
    #expect(try s.storedNames().isEmpty, "a value made small moves back into the row")
    try film.setValue(second, forKey: "poster")
    try context.save()
    context.delete(film)
    try context.save()
    #expect(try s.storedNames().isEmpty, "a deleted object's value is removed")
  }

  static func batchUpdatesAndDeletesRemoveTheirValues(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    for (index, title) in ["Alien", "Brazil", "Cube"].enumerated() {
      try s.insert(title, poster: ExternalStorageStore.bytes(ExternalStorageStore.large, seed: UInt8(index)))
    }
    let context = s.container.viewContext
    let isStored = s.store != nil
    if isStored { #expect(try s.storedNames().count == 3) }
    _ = try context.execute(
      .update(
        entityName: "Film", predicate: try QueryPredicate(format: "title == 'Alien'"),
        propertiesToUpdate: ["poster": try QueryExpression(format: "nil")]))
    #expect(try s.poster("Alien") == nil)
    #expect(try s.poster("Brazil") == ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 1))
    if isStored { #expect(try s.storedNames().count == 2, "the value a batch update cleared is removed") }
    _ = try context.execute(.delete(entityName: "Film", predicate: try QueryPredicate(format: "title == 'Brazil'")))
    if isStored { #expect(try s.storedNames().count == 1, "the value of a batch-deleted object is removed") }
    #expect(try s.poster("Cube") == ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 2))
  }

  static func failedSavesLeaveNoValue(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    try s.insert("Alien", poster: nil)
    let context = s.container.viewContext
    let clash = try context.insertObject(entityName: "Film")
    try clash.setValue("Alien", forKey: "title")
    try clash.setValue(ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 5), forKey: "poster")
    expectStoreError(.constraintConflict) { try context.save() }
    context.rollback()
    #expect(try s.storedNames().isEmpty, "the refused save's value is gone")
  }

  static func orphansAreRemovedAtOpen(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    try s.insert("Alien", poster: ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 1))
    guard let store = s.store, let url = s.description.url else { return s.container.close() }
    let kept = try s.storedNames()
    // Two values no row names, as a crash between writing them and committing would leave: one written
    // just now (a save of another process may still be under way: kept), one long ago (removed).
    let (recent, old) = (UUID(), UUID())
    try store.storage.write([(recent, Data([1])), (old, Data([2]))])
    if let directory = store.storage as? ExternalDataDirectory {
      try FileManager.default.setAttributes(
        [.modificationDate: Date(timeIntervalSinceNow: -2 * ExternalDataStore.orphanAge)],
        ofItemAtPath: directory.url.appendingPathComponent(old.uuidString).path)
    }
    s.container.close()
    let again = try ExternalStorageStore(backend, at: url)
    defer { again.container.close() }
    let names = try again.storedNames()
    #expect(names.isSuperset(of: kept), "values rows name stay")
    #expect(names.contains(recent), "a value written moments ago stays")
    if again.store?.storage is ExternalDataDirectory { #expect(!names.contains(old), "an old orphan is removed") }
    #expect(try again.poster("Alien") == ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 1))
  }

  static func copiesCarryTheValues(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let poster = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 7)
    try s.insert("Alien", poster: poster)
    let destination = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    #expect(try s.container.migratePersistentStore(to: destination) == 1)
    #expect(try s.poster("Alien") == poster)
    if let store = s.store {
      #expect(try store.storage.names().count == 1, "the copy keeps its own value")
      #expect(try s.rawPoster("Alien").flatMap(ExternalDataReference.decode) != nil)
    }
  }

  static func migrationsTurnItOnAndOff(_ backend: ConformanceBackend) async throws {
    guard backend.location != nil else { return }
    let inline = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 4)
    let before = try ExternalStorageStore(backend, external: false)
    try before.insert("Alien", poster: inline)
    #expect(try before.storedNames().isEmpty, "without the option every value stays in its row")
    let url = before.description.url
    before.container.close()
    // Turned on: values stored before read as they were; new large ones leave the rows.
    let on = try ExternalStorageStore(backend, at: url)
    #expect(try on.poster("Alien") == inline)
    let outside = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 6)
    try on.insert("Brazil", poster: outside)
    if on.store != nil { #expect(try on.storedNames().count == 1) }
    on.container.close()
    // Turned off again: the values kept out of line still read.
    let off = try ExternalStorageStore(backend, external: false, at: url)
    defer { off.container.close() }
    #expect(try off.poster("Alien") == inline)
    #expect(try off.poster("Brazil") == outside)
  }
}
