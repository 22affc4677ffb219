import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Transient attributes: tracked by the context, never written, back to their default when the object
  /// is loaded again, refreshed or `refreshAllObjects()` runs; `hasPersistentChangedValues` ignores them;
  /// a predicate or a sort on one is an error naming it.
  public static func transientAttributes(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = try backend.freshContext(container, url)
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    #expect(heat.scratch == nil)

    heat.scratch = "note to self"
    #expect(heat.isUpdated && heat.hasChanges && context.hasChanges)
    #expect(!heat.hasPersistentChangedValues)
    #expect(heat.changedValues().keys.sorted() == ["scratch"])
    try context.save()
    #expect(!context.hasChanges && !heat.hasChanges)
    #expect(heat.scratch == "note to self", "a save keeps the value in memory")
    let reader = try backend.freshContext(container, url)
    #expect(try reader.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first?.scratch == nil)

    heat.scratch = "again"
    heat.genre = "Heist"
    #expect(heat.hasPersistentChangedValues)
    context.refresh(heat, mergeChanges: true)
    #expect(heat.scratch == nil)
    #expect(heat.genre == "Heist", "a merging refresh keeps stored changes")
    heat.scratch = "third"
    context.refreshAllObjects()
    #expect(heat.scratch == nil)
    context.rollback()

    heat.scratch = "fourth"
    context.refresh(heat, mergeChanges: false)
    #expect(heat.scratch == nil && !heat.hasChanges)

    let inserted = Film(context: context)
    inserted.title = "Scratchpad"
    inserted.uuid = UUID()
    inserted.scratch = "unsaved"
    try context.save()
    let stored = try backend.freshContext(container, url)
    #expect(try stored.fetch(FetchRequest<Film>(format: "title == 'Scratchpad'")).first?.scratch == nil)

    for bad in ["scratch == 'x'", "scratch != nil", "title == 'Heat' OR scratch BEGINSWITH 'n'"] {
      do {
        _ = try context.fetch(try FetchRequest<Film>(format: bad))
        Issue.record("a predicate on a transient attribute should fail: \(bad)")
      } catch let error as StoreError {
        #expect(error.code == .invalidQuery)
        #expect(error.key == "scratch" || error.message.contains("scratch"), "\(error.message)")
      }
    }
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Film>(sortDescriptors: [QuerySort("scratch")])) }
  }

  /// Undo and redo before a save: attribute and relationship changes, inserts, deletes with their
  /// cascades, explicit groups; a save clears the stacks.
  public static func undo(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = try backend.freshContext(container, url)
    let undo = ContextUndoManager()
    context.undoManager = undo
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    let mann = try #require(heat.director)
    let jeunet = try #require(try context.fetch(FetchRequest<Director>(format: "name == 'Jean-Pierre Jeunet'")).first)

    heat.title = "Heat (1995)"
    heat.genre = "Heist"
    undo.undo()
    #expect(heat.title == "Heat (1995)" && heat.genre == "Crime")
    undo.undo()
    #expect(heat.title == "Heat" && !heat.hasChanges && !context.hasChanges)
    undo.redo()
    #expect(heat.title == "Heat (1995)" && heat.isUpdated)
    undo.undo()
    #expect(!context.hasChanges)

    heat.director = jeunet
    #expect(!mann.films.contains(heat) && jeunet.films.contains(heat))
    undo.undo()
    #expect(heat.director === mann && mann.films.contains(heat) && !jeunet.films.contains(heat))
    #expect(!context.hasChanges)
    undo.redo()
    #expect(heat.director === jeunet)
    undo.undo()

    let extra = Film(context: context)
    undo.beginUndoGrouping()
    extra.title = "Thief"
    extra.uuid = UUID()
    extra.director = mann
    undo.endUndoGrouping()
    #expect(mann.films.contains(extra))
    undo.undo()
    #expect(extra.title == "" && !mann.films.contains(extra))
    undo.undo()
    #expect(!context.insertedObjects.contains(extra) && !context.hasChanges)
    undo.redo()
    undo.redo()
    #expect(context.insertedObjects.contains(extra) && extra.title == "Thief" && mann.films.contains(extra))

    context.delete(mann)
    #expect(mann.isDeleted && heat.isDeleted && extra.isDeleted, "cascade")
    undo.undo()
    #expect(!mann.isDeleted && !heat.isDeleted && !extra.isDeleted)
    #expect(heat.director === mann && mann.films.contains(heat) && mann.films.contains(extra))
    #expect(context.deletedObjects.isEmpty && context.insertedObjects == [extra])
    undo.redo()
    #expect(context.deletedObjects.contains(mann) && context.deletedObjects.contains(heat))
    undo.undo()

    try context.save()
    #expect(!undo.canUndo && !undo.canRedo)
    let reader = try backend.freshContext(container, url)
    #expect(try reader.count(for: FetchRequest<Film>(format: "director.name == 'Michael Mann'")) == 3)
  }
}

/// The lifecycle area's model: a journal whose hooks record themselves and stamp dates with primitives.
public final class Journal: ManagedObject, ValueValidating {
  /// The title; a blank one fails `validateValue(_:forKey:)`.
  @Attribute public var title: String
  /// Stamped once, on insert.
  @Attribute public var created: Date?
  /// Stamped on every save.
  @Attribute public var lastModified: Date?
  /// A rating of at most 5.
  @Attribute(maximum: 5) public var rating: Int16
  /// A locked journal cannot be deleted.
  @Attribute public var locked: Bool
  /// The journal's entries, deleted with it.
  @Relationship(inverse: "journal", deleteRule: .cascade) public var entries: Set<JournalEntry>

  static let creation = Date(timeIntervalSinceReferenceDate: 700_000_000)
  var events: [String] = []
  var snapshotEvents: [SnapshotEvents] = []
  /// `key=SwiftType` of each value handed to `validateValue`, in order.
  var validatedValues: [String] = []

  public override func awakeFromInsert() {
    events.append("awakeFromInsert")
    try? setPrimitiveValue(Self.creation, forKey: "created")
  }
  public override func awakeFromFetch() { events.append("awakeFromFetch") }
  public override func willSave() {
    events.append("willSave")
    let now = Date.now
    let previous = lastModified ?? .distantPast
    try? setPrimitiveValue(now > previous ? now : previous.addingTimeInterval(0.001), forKey: "lastModified")
  }
  public override func didSave() { events.append("didSave") }
  public override func awake(fromSnapshotEvents events: SnapshotEvents) { snapshotEvents.append(events) }

  public func validateValue(_ value: Any?, forKey key: String) throws {
    validatedValues.append("\(key)=\(value.map { "\(type(of: $0))" } ?? "nil")")
    if key == "title", let text = value as? String, text.trimmingCharacters(in: .whitespaces).isEmpty {
      throw StoreError(.validation, "must not be blank")
    }
  }
  public override func validateForDelete() throws {
    if locked { throw StoreError(.validation, "a locked journal cannot be deleted") }
  }
}

/// An entry of a ``Journal``.
public final class JournalEntry: ManagedObject {
  /// The entry's text, at least one character.
  @Attribute(minimumLength: 1) public var text: String
  /// The journal the entry belongs to (required).
  @Relationship(inverse: "entries", isOptional: false) public var journal: Journal?

  var events: [String] = []
  public override func prepareForDeletion() { events.append("prepareForDeletion") }
}

/// Lifecycle hooks in order, primitive accessors that change nothing, `awake(fromSnapshotEvents:)`,
/// and validation: model rules and a subclass's own methods, every failure of one save in one error,
/// the store unchanged.
enum LifecycleCases {
  /// A store holding the journal "Field notes" with one entry, saved; a background context on it.
  static func journalStore(
    _ backend: ConformanceBackend
  ) throws -> (container: PersistentContainer, context: ObjectContext, journal: Journal, entry: JournalEntry) {
    let (container, _) = try backend.container(types: [Journal.self, JournalEntry.self])
    let context = container.newBackgroundContext()
    let journal = Journal(context: context)
    journal.title = "Field notes"
    let entry = JournalEntry(context: context)
    entry.text = "First"
    entry.journal = journal
    try context.save()
    return (container, context, journal, entry)
  }

  /// Hooks in order: awake from insert, will and did save (a primitive set in willSave marks nothing and
  /// is stored), awake from fetch, snapshot events of a refresh and a rollback.
  static func hooksRunInOrder(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.container(types: [Journal.self, JournalEntry.self])
    let context = container.newBackgroundContext()
    let journal = Journal(context: context)
    #expect(journal.events == ["awakeFromInsert"])
    #expect(journal.created == Journal.creation, "set in awakeFromInsert with a primitive")
    journal.title = "Field notes"
    let entry = JournalEntry(context: context)
    entry.text = "First"
    entry.journal = journal
    try context.save()
    #expect(journal.events == ["awakeFromInsert", "willSave", "didSave"])
    #expect(
      journal.validatedValues == ["title=String", "created=Date", "lastModified=Date", "rating=Int64", "locked=Bool"],
      "a ValueValidating class is asked about every stored attribute, with its Swift value")
    let firstStamp = try #require(journal.lastModified)
    #expect(!journal.hasChanges, "a primitive set in willSave marks nothing")

    journal.title = "Field notes, vol. 2"
    try context.save()
    #expect((journal.lastModified ?? .distantPast) > firstStamp)
    let reader = container.newBackgroundContext()
    let read = try #require(try reader.fetch(FetchRequest<Journal>()).first)
    #expect(read.events.isEmpty)
    #expect(read.lastModified == journal.lastModified, "the stamp set in willSave is stored")
    #expect(read.events == ["awakeFromFetch"])
    reader.refresh(read, mergeChanges: false)
    _ = read.title
    #expect(read.events == ["awakeFromFetch", "awakeFromFetch"])
    read.title = "Changed"
    reader.refresh(read, mergeChanges: true)
    #expect(read.snapshotEvents == [.refresh])
    reader.rollback()
    #expect(read.snapshotEvents.last == .rollback)
    #expect(read.title == "Field notes, vol. 2")
  }

  /// Primitive accessors change nothing (and check keys and types); a delete prepares the object.
  static func primitiveAccessorsChangeNothing(_ backend: ConformanceBackend) async throws {
    let (_, context, journal, entry) = try journalStore(backend)
    try journal.setPrimitiveValue("Quiet", forKey: "title")
    #expect(journal.title == "Quiet" && !journal.hasChanges)
    expectStoreError(.invalidQuery) { try journal.setPrimitiveValue("x", forKey: "nosuchkey") }
    expectStoreError(.validation) { try journal.setPrimitiveValue(12, forKey: "title") }
    context.refresh(journal, mergeChanges: false)

    context.delete(entry)
    #expect(entry.events.contains("prepareForDeletion"))
    try context.save()
  }

  /// Validation: model rules and the subclass's own, all reported together; nothing is written.
  static func validationFailuresAreReportedTogether(_ backend: ConformanceBackend) async throws {
    let (container, context, _, _) = try journalStore(backend)
    let bad = Journal(context: context)
    bad.title = "   "
    bad.rating = 9
    let orphan = JournalEntry(context: context)
    orphan.text = ""
    do {
      try context.save()
      Issue.record("an invalid save should throw")
    } catch let error as StoreError {
      #expect(error.code == .validation)
      let keys = Set(error.conflicts.flatMap(\.keys))
      #expect(keys == ["title", "rating", "text", "journal"], "\(error.message)")
      #expect(error.message.contains("must not be blank"))
      #expect(error.message.contains("at most 5"))
    }
    #expect(try container.newBackgroundContext().count(for: FetchRequest<Journal>()) == 1)
    context.rollback()
  }

  /// A subclass's `validateForDelete` refuses the delete of a locked journal; nothing is written.
  static func validateForDeleteCanRefuse(_ backend: ConformanceBackend) async throws {
    let (container, context, _, _) = try journalStore(backend)
    let kept = try #require(try context.fetch(FetchRequest<Journal>()).first)
    kept.locked = true
    try context.save()
    context.delete(kept)
    expectStoreError(.validation) { try context.save() }
    #expect(try container.newBackgroundContext().count(for: FetchRequest<Journal>()) == 1)
    context.rollback()
  }
}
