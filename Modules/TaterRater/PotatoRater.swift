import Foundation
import Strata

/// The TaterRater feature: potato varieties with the crowd's rating and the user's own, over any Strata store.
///
/// Every method works on a private-queue context of its own, so none needs the main queue.
public struct PotatoRater: Sendable {
  public let container: PersistentContainer
  private let context: ObjectContext

  public static let name = "TaterRater"

  /// The current model (version "3" of ``migrationPlan()``): potatoes and their tasting notes, mirrored.
  public static func makeModel() throws -> ObjectModel { try migrationPlan().current.model }

  /// A container of the current model with `store` loaded; a store written by an earlier version
  /// migrates when it opens, reporting to `migrationProgress`. The store tracks persistent history (a
  /// writable one): it is the outbox of a `StoreMirror`, so ratings made offline are pushed by the next sync.
  public static func makeContainer(
    store: StoreDescription, registry: StoreRegistry, migrationProgress: (@Sendable (MigrationProgress) -> Void)? = nil
  ) throws -> PersistentContainer {
    let container = PersistentContainer(
      name: name, plan: try migrationPlan(), types: [Potato.self, Tasting.self], registry: registry)
    var store = store
    if !store.options.isReadOnly { store.options.tracksHistory = true }
    container.storeDescriptions = [store]
    container.migrationProgressHandler = migrationProgress
    try container.loadPersistentStores()
    return container
  }

  public init(container: PersistentContainer) {
    self.container = container
    context = container.newBackgroundContext()
    // Another process rating or noting the same potato: each keeps the properties it changed.
    context.mergePolicy = .mergeByPropertyObjectTrump
  }

  /// The potatoes by variety, in localized standard order ("Agata" before "agria" before "Ajanhuiri").
  public static var listRequest: FetchRequest<Potato> {
    FetchRequest<Potato>(sortDescriptors: [QuerySort("variety", comparator: .localizedStandard)])
  }

  /// How many potatoes the store holds.
  public func potatoCount() throws -> Int {
    try context.performAndWait { try context.count(for: FetchRequest<Potato>()) }
  }

  /// Every potato by variety.
  public func potatoes() throws -> [PotatoRecord] {
    try context.performAndWait { try context.fetch(Self.listRequest).map(PotatoRecord.init) }
  }

  /// Every potato by variety, in sections by first letter with diacritics folded, as a fetched results
  /// controller gives them.
  public func sections() throws -> [PotatoSection] {
    try context.performAndWait {
      let controller = FetchedResultsController(
        fetchRequest: Self.listRequest, managedObjectContext: context, sectionName: { Potato.section(of: $0.variety) })
      try controller.performFetch()
      return (controller.sections ?? []).map { PotatoSection(name: $0.name, potatoes: $0.objects.map(PotatoRecord.init)) }
    }
  }

  /// The potato named `variety` (case and accents ignored when no variety matches exactly).
  /// - Throws: `.notFound` naming the variety.
  public func potato(_ variety: String) throws -> PotatoRecord {
    try context.performAndWait { PotatoRecord(try find(variety)) }
  }

  /// Sets the user's rating of `variety`, 0 to 5 stars; the model's validation refuses others.
  /// - Throws: `.notFound` for an unknown variety; `.validation` naming `userRating`, leaving the store as it was.
  @discardableResult
  public func rate(_ variety: String, stars: Int) throws -> PotatoRecord {
    try context.performAndWait {
      let potato = try find(variety)
      guard let rating = Int16(exactly: stars) else {
        let rule = stars < 0 ? "must be at least 0" : "must be at most 5"
        throw StoreError(
          .validation, "Potato.userRating \(rule) (got \(stars))", entity: "Potato", key: "userRating",
          value: .int(Int64(stars)))
      }
      potato.userRating = rating
      try save()
      return PotatoRecord(potato)
    }
  }

  /// Adds a tasting note, one per line of `text`, to `variety`, written at `date`; empty text clears
  /// every note.
  /// - Throws: `.notFound` for an unknown variety.
  @discardableResult
  public func note(_ variety: String, text: String, at date: Date = Date()) throws -> PotatoRecord {
    try context.performAndWait {
      let potato = try find(variety)
      let lines = CarriedNotes.lines(of: text)
      if lines.isEmpty {
        for tasting in potato.tastings { context.delete(tasting) }
      }
      for line in lines { addTasting(line, at: date, to: potato, in: context) }
      try save()
      return PotatoRecord(potato)
    }
  }

  func insert(_ record: PotatoRecord, into context: ObjectContext) {
    let potato = Potato(context: context)
    potato.variety = record.variety
    potato.crowdRating = record.crowdRating
    potato.userRating = Int16(clamping: record.userRating)
    for line in CarriedNotes.lines(of: record.notes ?? "") { addTasting(line, at: nil, to: potato, in: context) }
  }

  private func addTasting(_ text: String, at date: Date?, to potato: Potato, in context: ObjectContext) {
    let tasting = Tasting(context: context)
    tasting.text = text
    tasting.writtenAt = date
    tasting.potato = potato
  }

  private func find(_ variety: String) throws -> Potato {
    let matches = try context.fetch(try FetchRequest<Potato>(format: "variety ==[cd] %@", variety))
    if let exact = matches.first(where: { $0.variety == variety }) { return exact }
    if matches.count == 1, let only = matches.first { return only }
    throw StoreError(
      .notFound, "no potato variety is named '\(variety)'", entity: "Potato", key: "variety", value: .string(variety))
  }

  private func save() throws {
    do {
      try context.save()
    } catch {
      context.rollback()
      throw error
    }
  }
}
