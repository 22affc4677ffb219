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

/// Values kept in external storage are read lazily: fetching or faulting an object, a predicate, a sort, a
/// count, or a save that leaves the attribute alone reads none of them; the first read of the attribute
/// reads it (byte for byte) and later reads use it; a value gone from the storage fails at that read only.
/// Factories wrap their stores only when something is kept, or may be kept, out of the rows.
enum ExternalStorageLazyCases {
  static let titles = ["Alien", "Brazil", "Cube"]

  static func posters() -> [Data] {
    titles.indices.map { ExternalStorageStore.bytes(ExternalStorageStore.large + $0, seed: UInt8(10 + $0)) }
  }

  static func valuesAreReadOnlyWhenTheAttributeIs(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let posters = posters()
    for (index, title) in titles.enumerated() {
      try s.insert(title, poster: posters[index], note: Data([UInt8(index)]))
    }
    // How many values the store has read from its external storage (always 0 on a backend that keeps
    // every value in its rows).
    func reads() -> Int { s.store?.externalValuesRead ?? 0 }
    let start = reads()
    let context = s.container.newBackgroundContext()
    try context.performAndWait {
      var request = FetchRequest<ManagedObject>(
        entityName: "Film", predicate: try QueryPredicate(format: "title != 'Nope' AND poster != nil"),
        sortDescriptors: [QuerySort("title", ascending: false)])
      request.returnsObjectsAsFaults = false
      let films = try context.fetch(request)
      #expect(films.map { $0.value(forKey: "title") as? String } == titles.reversed().map(Optional.some))
      #expect(films.map { $0.value(forKey: "note") as? Data } == [Data([2]), Data([1]), Data([0])])
      #expect(
        try context.count(
          for: FetchRequest<ManagedObject>(entityName: "Film", predicate: try QueryPredicate(format: "poster != nil"))) == 3)
      #expect(reads() == start, "fetching, sorting, counting and reading other attributes read no external value")

      // A fault fired by another attribute reads none either.
      let fault = context.object(with: films[0].objectID)
      context.refresh(fault, mergeChanges: false)
      #expect(fault.value(forKey: "title") as? String == "Cube")
      // A save that leaves the poster alone neither reads nor moves it.
      let names = try s.storedNames()
      try films[1].setValue(Data([9]), forKey: "note")
      try context.save()
      #expect(reads() == start, "a save of another attribute reads no external value")
      #expect(try s.storedNames() == names)

      // The first read reads the value, byte for byte; later reads (and a save) use it.
      #expect(films[1].value(forKey: "poster") as? Data == posters[1])
      let afterFirst = reads()
      if s.store != nil { #expect(afterFirst == start + 1, "one value read") }
      #expect(films[1].value(forKey: "poster") as? Data == posters[1])
      #expect(try films[1].fulfilledValue(forKey: "poster") as? Data == posters[1])
      try films[1].setValue(Data([8]), forKey: "note")
      try context.save()
      #expect(reads() == afterFirst, "a value read once is not read again")
      #expect(try s.storedNames() == names, "saving an object whose value was read keeps the stored value")
    }
    #expect(try s.poster("Brazil") == posters[1])
    #expect(try s.poster("Alien") == posters[0])
  }

  static func childContextsReadAndKeepTheValues(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let posters = posters()
    for (index, title) in titles.enumerated() { try s.insert(title, poster: posters[index]) }
    let names = try s.storedNames()
    let parent = s.container.newBackgroundContext()
    let ids = try parent.performAndWait {
      try parent.fetch(FetchRequest<ManagedObject>(entityName: "Film", sortDescriptors: [QuerySort("title")])).map(\.objectID)
    }
    // A child reads a value its parent never read, changes another attribute and saves up to the store.
    let child = parent.newChildContext()
    try child.performAndWait {
      let film = child.object(with: ids[2])
      #expect(film.value(forKey: "poster") as? Data == posters[2])
      #expect(child.object(with: ids[1]).value(forKey: "title") as? String == "Brazil")
      try child.object(with: ids[1]).setValue(Data([7]), forKey: "note")
      try child.save()
    }
    try parent.performAndWait { try parent.save() }
    #expect(try s.storedNames() == names, "saving through a child keeps every stored value")
    #expect(try s.poster("Brazil") == posters[1])
    #expect(try s.poster("Cube") == posters[2])
  }

  /// An undo restores an external-storage value its context replaced without reading, after another
  /// context's save replaced it in the store and removed the old value: as its bytes, not a reference to
  /// what is gone.
  static func undoRestoresAValueNeverRead(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let posters = posters()
    try s.insert("Alien", poster: posters[0])
    let request = FetchRequest<ManagedObject>(entityName: "Film")
    let editor = s.container.newBackgroundContext()
    let undo = ContextUndoManager()
    let film = try editor.performAndWait {
      editor.undoManager = undo
      let film = try editor.fetch(request)[0]
      try film.setValue(posters[1], forKey: "poster")
      return film
    }
    let other = s.container.newBackgroundContext()
    try other.performAndWait {
      try other.fetch(request)[0].setValue(posters[2], forKey: "poster")
      try other.save()
    }
    try editor.performAndWait {
      editor.refresh(film, mergeChanges: true)
      undo.undo()
      let changed = film.changedValues()["poster"]
      let restored = changed == .data(posters[0])
      #expect(restored, "the undone value, as its bytes: \(String(describing: changed).prefix(80))")
      let read = film.value(forKey: "poster") as? Data
      #expect(read == posters[0], "the undone value reads back (\(read?.count ?? 0) bytes)")
      try editor.save()
    }
    #expect(try s.poster("Alien") == posters[0], "the restored value was saved whole")
  }

  static func aPinnedContextReadsValuesReplacedSince(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let posters = posters()
    try s.insert("Alien", poster: posters[0])
    let pinned = s.container.newBackgroundContext()
    let film = try pinned.performAndWait {
      try pinned.setQueryGenerationFrom(.current)
      return try pinned.fetch(FetchRequest<ManagedObject>(entityName: "Film"))[0]
    }
    // Another context replaces the value before the pinned one reads it.
    let writer = s.container.newBackgroundContext()
    try writer.performAndWait {
      let mine = try writer.fetch(FetchRequest<ManagedObject>(entityName: "Film"))[0]
      try mine.setValue(posters[1], forKey: "poster")
      try writer.save()
    }
    try pinned.performAndWait {
      #expect(try film.fulfilledValue(forKey: "poster") as? Data == posters[0], "the pinned generation's value")
      try pinned.setQueryGenerationFrom(nil)
    }
    #expect(try s.poster("Alien") == posters[1])
    if s.store != nil { #expect(try s.storedNames().count == 1, "the replaced value goes once no generation is pinned") }
  }

  static func aMissingValueFailsOnlyWhenRead(_ backend: ConformanceBackend) async throws {
    let s = try ExternalStorageStore(backend)
    defer { s.container.close() }
    let posters = posters()
    try s.insert("Alien", poster: posters[0], note: Data([1]))
    try s.insert("Brazil", poster: posters[1], note: Data([2]))
    let reference = try s.rawPoster("Alien").flatMap(ExternalDataReference.decode)
    let context = s.container.newBackgroundContext()
    try context.performAndWait {
      let films = try context.fetch(
        FetchRequest<ManagedObject>(entityName: "Film", sortDescriptors: [QuerySort("title")]))
      #expect(films.map { $0.value(forKey: "note") as? Data } == [Data([1]), Data([2])])
      guard let store = s.store, let reference else {
        // Every value stays in its row: nothing can go missing.
        #expect(try films[0].fulfilledValue(forKey: "poster") as? Data == posters[0])
        return
      }
      // The value goes missing after the object was fetched (and its other attributes read).
      try store.storage.remove([reference])
      #expect(films[0].value(forKey: "title") as? String == "Alien")
      #expect(films[0].value(forKey: "note") as? Data == Data([1]))
      expectStoreError(.corrupted, "reading the missing value throws") { try films[0].fulfilledValue(forKey: "poster") }
      #expect(films[0].value(forKey: "poster") == nil, "the getter reads nil (and logs), never the reference")
      #expect(films[1].value(forKey: "poster") as? Data == posters[1], "the other object's value reads")
      // The object stays usable: a change to another attribute saves.
      try films[0].setValue(Data([3]), forKey: "note")
      try context.save()
    }
    #expect(
      try s.rawPoster("Alien").flatMap(ExternalDataReference.decode) == reference,
      "a save of another attribute keeps the row's reference")
  }

  static func storesAreWrappedOnlyWhenNeeded(_ backend: ConformanceBackend) async throws {
    guard backend.location != nil else { return }
    // A backend that keeps values out of its rows (its store for the model with the option is wrapped).
    let probe = try ExternalStorageStore(backend)
    let wraps = probe.store != nil
    probe.container.close()
    guard wraps else { return }
    let plain = try ExternalStorageStore(backend, external: false)
    #expect(plain.store == nil, "a store whose model keeps nothing out of its rows is not wrapped")
    let inline = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 4)
    try plain.insert("Alien", poster: inline)
    let url = plain.description.url
    plain.container.close()
    // Turned on by a migration: wrapped, and a new large value leaves its row.
    let on = try ExternalStorageStore(backend, at: url)
    #expect(on.store != nil, "a store migrated to a model allowing external storage is wrapped")
    #expect(try on.poster("Alien") == inline)
    let outside = ExternalStorageStore.bytes(ExternalStorageStore.large, seed: 6)
    try on.insert("Brazil", poster: outside)
    #expect(try on.storedNames().count == 1)
    on.container.close()
    // Turned off with a value still kept out of line: wrapped, so that it reads.
    let off = try ExternalStorageStore(backend, external: false, at: url)
    #expect(off.store != nil, "a store whose storage holds values stays wrapped when its model turns the option off")
    #expect(try off.poster("Brazil") == outside)
    // Saved again, the value moves back into its row; with the storage empty, the next open is not wrapped.
    let context = off.container.viewContext
    let brazil = try context.fetch(
      FetchRequest<ManagedObject>(entityName: "Film", predicate: try QueryPredicate(format: "title == 'Brazil'")))
    try #require(brazil.count == 1)
    try brazil[0].setValue(ExternalStorageStore.bytes(ExternalStorageStore.large + 1, seed: 7), forKey: "poster")
    try context.save()
    #expect(try off.storedNames().isEmpty)
    off.container.close()
    let unwrapped = try ExternalStorageStore(backend, external: false, at: url)
    defer { unwrapped.container.close() }
    #expect(unwrapped.store == nil, "nothing kept out of the rows and no attribute allowing it: not wrapped")
    #expect(try unwrapped.poster("Brazil") == ExternalStorageStore.bytes(ExternalStorageStore.large + 1, seed: 7))
    #expect(try unwrapped.poster("Alien") == inline)
  }
}
