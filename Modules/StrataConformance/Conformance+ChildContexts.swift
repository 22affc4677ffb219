import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Child contexts read their parent's objects as they are (unsaved changes included), and their saves
  /// reach the parent — inserts, edits, relationships, deletes — but not the store until the parent saves.
  public static func childContexts(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let parent = container.newBackgroundContext()
    let child = parent.newChildContext()
    #expect(child.parent === parent)
    func titles(_ context: ObjectContext, _ format: String) throws -> [String] {
      try context.performAndWait {
        try context.fetch(try FetchRequest<Film>(format: format, sortDescriptors: [QuerySort("title")])).map(\.title)
      }
    }
    func stored(_ format: String) throws -> [String] { try titles(try backend.freshContext(container, url), format) }

    try parent.performAndWait {
      let heat = try #require(try parent.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
      heat.genre = "Heist"
      let zulu = Film(context: parent)
      zulu.title = "Zulu"
      zulu.uuid = UUID()
    }
    #expect(try titles(child, "genre == 'Heist'") == ["Heat"])
    #expect(try titles(child, "title BEGINSWITH 'Z'") == ["Zulu"])
    #expect(try child.performAndWait { try child.count(for: FetchRequest<Film>()) } == 11)

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
    #expect(try titles(parent, "director.name == 'Michael Mann'") == ["Collateral", "Heat (child)", "Thief"])
    #expect(try titles(parent, "title == 'Delicatessen'").isEmpty)
    #expect(parent.performAndWait { parent.hasChanges })
    #expect(try stored("director.name == 'Michael Mann'") == ["Collateral", "Heat"], "the store waits for the parent")
    #expect(try stored("title == 'Delicatessen'") == ["Delicatessen"])

    // A child's failed save changes nothing in the parent; a rollback in the child leaves the parent alone.
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
    #expect(try titles(parent, "title == 'Bad' OR genre == 'Rolled back'").isEmpty)

    try parent.performAndWait { try parent.save() }
    #expect(try stored("director.name == 'Michael Mann'") == ["Collateral", "Heat (child)", "Thief"])
    #expect(try stored("title == 'Delicatessen' OR title == 'Zulu'") == ["Zulu"])
    #expect(try stored("genre == 'Heist'") == ["Heat (child)"])

    // Objects the child inserted, saved by the parent since: the child keeps the same instances, still
    // registered under their temporary IDs until they take their permanent ones (at the child's next read
    // from or save to the parent), and what it changes on them — values, relationships both ways,
    // deletion — reaches the store. (Core Data leaves such objects with temporary IDs.)
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
      try backend.freshContext(container, url).fetch(FetchRequest<Film>(format: "title == 'Ran'")).first?.objectID)
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
    #expect(try stored("genre == 'Jidaigeki'") == ["Ran"])
    #expect(try stored("ANY actors.name == 'Tatsuya Nakadai'") == ["Ran"])
    #expect(try stored("title == 'Kagemusha'").isEmpty)
    #expect(try stored("title == 'Ran'").count == 1)
    let helper = try backend.freshContext(container, url)
    #expect(try helper.count(for: FetchRequest<Actor>(format: "name == 'Tatsuya Nakadai'")) == 1)

    // Two levels down: a grandchild's insert saved through the child and the parent, then edited there.
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
    #expect(try stored("genre == 'Shomin-geki'") == ["Ikiru"])
    #expect(
      try grandchild.performAndWait { try grandchild.fetch(FetchRequest<Film>(format: "title == 'Ikiru'")).first } === ikiru)
    #expect(!ikiru.objectID.isTemporary)
  }
}
