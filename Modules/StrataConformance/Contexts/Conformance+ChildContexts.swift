import Foundation
import Strata
import StrataStoreKit
import Testing

/// The child-contexts area's starting point: the sample store, a background `parent` and its `child`.
struct ChildStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let parent: ObjectContext
  let child: ObjectContext

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    parent = container.newBackgroundContext()
    child = parent.newChildContext()
    #expect(child.parent === parent)
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  func titles(_ context: ObjectContext, _ format: String) throws -> [String] {
    try context.performAndWait {
      try context.fetch(try FetchRequest<Film>(format: format, sortDescriptors: [QuerySort("title")])).map(\.title)
    }
  }

  func stored(_ format: String) throws -> [String] { try titles(try fresh(), format) }

  /// Unsaved in the parent: Heat's genre "Heist", a new film "Zulu".
  func editParent() throws {
    let parent = parent
    try parent.performAndWait {
      let heat = try #require(try parent.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
      heat.genre = "Heist"
      let zulu = Film(context: parent)
      zulu.title = "Zulu"
      zulu.uuid = UUID()
    }
  }
}

/// Child contexts read their parent's objects as they are (unsaved changes included), and their saves
/// reach the parent — inserts, edits, relationships, deletes — but not the store until the parent saves.
enum ChildContextCases {
  /// A child reads its parent's unsaved changes.
  static func childrenReadTheirParentsUnsavedChanges(_ backend: ConformanceBackend) async throws {
    let s = try ChildStore(backend)
    let child = s.child
    try s.editParent()
    #expect(try s.titles(child, "genre == 'Heist'") == ["Heat"])
    #expect(try s.titles(child, "title BEGINSWITH 'Z'") == ["Zulu"])
    #expect(try child.performAndWait { try child.count(for: FetchRequest<Film>()) } == 11)
  }

  /// A child's save of edits, an insert with a relationship and a delete reaches the parent, and the
  /// store only once the parent saves.
  static func childSavesReachTheStoreThroughTheParent(_ backend: ConformanceBackend) async throws {
    let s = try ChildStore(backend)
    let (parent, child) = (s.parent, s.child)
    try s.editParent()
    try child.performAndWait {
      let heat = try #require(try child.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
      #expect(heat.genre == "Heist")
      heat.title = "Heat (child)"
      let mann = try #require(heat.director)
      let extra = Film(context: child)
      extra.title = "Thief"
      extra.uuid = UUID()
      extra.director = mann
      let delicatessen = try #require(try child.fetch(FetchRequest<Film>(format: "title == 'Delicatessen'")).first)
      child.delete(delicatessen)
      try child.save()
      #expect(!child.hasChanges)
    }
    #expect(try s.titles(parent, "director.name == 'Michael Mann'") == ["Collateral", "Heat (child)", "Thief"])
    #expect(try s.titles(parent, "title == 'Delicatessen'").isEmpty)
    #expect(parent.performAndWait { parent.hasChanges })
    #expect(try s.stored("director.name == 'Michael Mann'") == ["Collateral", "Heat"], "the store waits for the parent")
    #expect(try s.stored("title == 'Delicatessen'") == ["Delicatessen"])

    try parent.performAndWait { try parent.save() }
    #expect(try s.stored("director.name == 'Michael Mann'") == ["Collateral", "Heat (child)", "Thief"])
    #expect(try s.stored("title == 'Delicatessen' OR title == 'Zulu'") == ["Zulu"])
    #expect(try s.stored("genre == 'Heist'") == ["Heat (child)"])
  }

  /// A child's failed save changes nothing in the parent; a rollback in the child leaves the parent alone.
  static func failedChildSavesLeaveTheParentAlone(_ backend: ConformanceBackend) async throws {
    let s = try ChildStore(backend)
    let (parent, child) = (s.parent, s.child)
    try child.performAndWait {
      let bad = Film(context: child)
      bad.title = "Bad"
      bad.rating = 11
      bad.uuid = UUID()
      expectStoreError(.validation) { try child.save() }
      child.rollback()
      let collateral = try #require(try child.fetch(FetchRequest<Film>(format: "title == 'Collateral'")).first)
      collateral.genre = "Rolled back"
      child.rollback()
    }
    #expect(try s.titles(parent, "title == 'Bad' OR genre == 'Rolled back'").isEmpty)
  }

  /// Objects the child inserted, saved by the parent since: the child keeps the same instances, still
  /// registered under their temporary IDs until they take their permanent ones (at the child's next read
  /// from or save to the parent), and what it changes on them — values, relationships both ways,
  /// deletion — reaches the store. (Core Data leaves such objects with temporary IDs.)
  static func childInsertsTakeTheirPermanentIDs(_ backend: ConformanceBackend) async throws {
    let s = try ChildStore(backend)
    let (parent, child) = (s.parent, s.child)
    let (ran, kagemusha, actor, temporaryID) = try child.performAndWait {
      let ran = Film(context: child)
      ran.title = "Ran"
      ran.uuid = UUID()
      let kagemusha = Film(context: child)
      kagemusha.title = "Kagemusha"
      kagemusha.uuid = UUID()
      let actor = Actor(context: child)
      actor.name = "Tatsuya Nakadai"
      try child.save()
      #expect(ran.objectID.isTemporary)
      #expect(try child.existingObject(with: ran.objectID) === ran)
      #expect(try child.fetch(FetchRequest<Film>(format: "title == 'Ran'")).first === ran)
      return (ran, kagemusha, actor, ran.objectID)
    }
    try parent.performAndWait { try parent.save() }
    let ranID = try #require(
      try s.fresh().fetch(FetchRequest<Film>(format: "title == 'Ran'")).first?.objectID)
    try child.performAndWait {
      ran.genre = "Jidaigeki"
      ran.actors.insert(actor)
      child.delete(kagemusha)
      try child.save()
      #expect(ran.objectID == ranID && !actor.objectID.isTemporary)
      #expect(try child.fetch(FetchRequest<Film>(format: "title == 'Ran'")).first === ran)
      #expect(try child.existingObject(with: temporaryID) === ran)
      #expect(try child.fetch(FetchRequest<Film>(format: "ANY actors.name == 'Tatsuya Nakadai'")).map(\.title) == ["Ran"])
    }
    try parent.performAndWait { try parent.save() }
    #expect(try s.stored("genre == 'Jidaigeki'") == ["Ran"])
    #expect(try s.stored("ANY actors.name == 'Tatsuya Nakadai'") == ["Ran"])
    #expect(try s.stored("title == 'Kagemusha'").isEmpty)
    #expect(try s.stored("title == 'Ran'").count == 1)
    let helper = try s.fresh()
    #expect(try helper.count(for: FetchRequest<Actor>(format: "name == 'Tatsuya Nakadai'")) == 1)
  }

  /// Two levels down: a grandchild's insert saved through the child and the parent, then edited there.
  static func grandchildSavesReachTheStore(_ backend: ConformanceBackend) async throws {
    let s = try ChildStore(backend)
    let (parent, child) = (s.parent, s.child)
    let grandchild = child.newChildContext()
    let ikiru = try grandchild.performAndWait {
      let ikiru = Film(context: grandchild)
      ikiru.title = "Ikiru"
      ikiru.uuid = UUID()
      try grandchild.save()
      return ikiru
    }
    try child.performAndWait { try child.save() }
    try parent.performAndWait { try parent.save() }
    try grandchild.performAndWait {
      ikiru.genre = "Shomin-geki"
      try grandchild.save()
    }
    try child.performAndWait { try child.save() }
    try parent.performAndWait { try parent.save() }
    #expect(try s.stored("genre == 'Shomin-geki'") == ["Ikiru"])
    #expect(
      try grandchild.performAndWait { try grandchild.fetch(FetchRequest<Film>(format: "title == 'Ikiru'")).first } === ikiru)
    #expect(!ikiru.objectID.isTemporary)
  }
}
