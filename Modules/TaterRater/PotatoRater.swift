import Foundation
import Strata

/// The TaterRater feature: potato varieties with the crowd's rating and the user's own, over any Strata store.
///
/// Every method works on a private-queue context of its own, so none needs the main queue.
public struct PotatoRater: Sendable {
  public let container: PersistentContainer
  private let context: ObjectContext

  public static let name = "TaterRater"

  public static func makeModel() throws -> ObjectModel { try ObjectModel(Potato.self) }

  public static func makeContainer(store: StoreDescription, registry: StoreRegistry) throws -> PersistentContainer {
    try PersistentContainer.loaded(name: name, model: try makeModel(), types: [Potato.self], store: store, registry: registry)
  }

  public init(container: PersistentContainer) {
    self.container = container
    context = container.newBackgroundContext()
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

  /// Sets the notes of `variety`; empty text clears them.
  /// - Throws: `.notFound` for an unknown variety.
  @discardableResult
  public func note(_ variety: String, text: String) throws -> PotatoRecord {
    try context.performAndWait {
      let potato = try find(variety)
      let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
      potato.notes = trimmed.isEmpty ? nil : trimmed
      try save()
      return PotatoRecord(potato)
    }
  }

  func insert(_ record: PotatoRecord, into context: ObjectContext) {
    let potato = Potato(context: context)
    potato.variety = record.variety
    potato.crowdRating = record.crowdRating
    potato.userRating = Int16(clamping: record.userRating)
    potato.notes = record.notes
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
