import Foundation
import Strata

/// The FireballWatch feature: NASA/JPL fireball reports and the user's groups of them, over any Strata store.
///
/// Imports write from a context whose transaction author is ``importAuthor``; the user's edits (deletes,
/// groups) from one whose author is ``editAuthor``, so that persistent history can tell them apart.
/// Every method works on a private-queue context of its own, so none needs the main queue.
public struct FireballWatch: Sendable {
  public let container: PersistentContainer
  let context: ObjectContext

  public static let name = "FireballWatch"
  /// The transaction author of imports.
  public static let importAuthor = "Fireball Data Import"
  /// The transaction author of the user's edits.
  public static let editAuthor = "FireballWatch"

  public static func makeModel() throws -> ObjectModel { try ObjectModel(Fireball.self, FireballGroup.self) }

  public static func makeContainer(store: StoreDescription, registry: StoreRegistry) throws -> PersistentContainer {
    var store = store
    store.options.tracksHistory = true
    store.options.postsRemoteChangeNotifications = true
    return try PersistentContainer.loaded(
      name: name, model: try makeModel(), types: [Fireball.self, FireballGroup.self], store: store, registry: registry)
  }

  public init(container: PersistentContainer) {
    self.container = container
    context = container.newBackgroundContext()
    context.transactionAuthor = Self.editAuthor
    // Other processes edit the same groups: their changes to other properties and links are kept.
    context.mergePolicy = .mergeByPropertyObjectTrump
  }

  /// How many fireballs the store holds.
  public func fireballCount() throws -> Int {
    try context.performAndWait { try context.count(for: FetchRequest<Fireball>()) }
  }

  /// The fireballs `query` selects, in its order.
  public func fireballs(_ query: FireballQuery = FireballQuery()) throws -> [FireballRecord] {
    try context.performAndWait { try context.fetch(query.fetchRequest).map(FireballRecord.init) }
  }

  /// The fireball seen at `date`.
  /// - Throws: `.notFound` naming the date.
  public func fireball(at date: Date) throws -> FireballRecord {
    try context.performAndWait { FireballRecord(try find(date)) }
  }

  /// Deletes the fireball seen at `date`; the groups holding it count one fewer.
  /// - Throws: `.notFound` naming the date, leaving the store as it was.
  @discardableResult
  public func delete(at date: Date) throws -> FireballRecord {
    try context.performAndWait {
      let fireball = try find(date)
      let record = FireballRecord(fireball)
      context.delete(fireball)
      try save()
      return record
    }
  }

  func find(_ date: Date) throws -> Fireball {
    guard let fireball = try context.fetch(try FetchRequest<Fireball>(format: "dateTimeStamp == %@", date)).first else {
      let text = FireballDate.string(from: date)
      throw StoreError(.notFound, "no fireball was seen at \(text)", entity: "Fireball", key: "dateTimeStamp", value: .date(date))
    }
    return fireball
  }

  func save() throws {
    do {
      try context.save()
    } catch {
      context.rollback()
      throw error
    }
  }
}

/// How ``FireballWatch/fireballs(_:)`` sorts: newest first, or the most energetic first.
public enum FireballSort: String, Sendable, Hashable, CaseIterable {
  case date, energy, impact
}

/// Which fireballs to list, and in which order.
public struct FireballQuery: Sendable, Hashable {
  public var sort: FireballSort
  /// Only fireballs with at least this impact energy, in kilotons.
  public var minimumImpactEnergy: Double?
  /// At most this many.
  public var limit: Int?

  public init(sort: FireballSort = .date, minimumImpactEnergy: Double? = nil, limit: Int? = nil) {
    self.sort = sort
    self.minimumImpactEnergy = minimumImpactEnergy
    self.limit = limit
  }

  /// Descending on the sort's key, then newest first.
  public var fetchRequest: FetchRequest<Fireball> {
    let newestFirst = QuerySort(\Fireball.dateTimeStamp, ascending: false)
    let sorts: [QuerySort] =
      switch sort {
      case .date: [newestFirst]
      case .energy: [QuerySort(\Fireball.radiatedEnergy, ascending: false), newestFirst]
      case .impact: [QuerySort(\Fireball.impactEnergy, ascending: false), newestFirst]
      }
    var request = FetchRequest<Fireball>(sortDescriptors: sorts, fetchLimit: limit)
    if let minimumImpactEnergy {
      request.predicate = .comparison(
        Comparison(.keyPath("impactEnergy"), .greaterThanOrEqualTo, .constant(.double(minimumImpactEnergy))))
    }
    return request
  }
}
