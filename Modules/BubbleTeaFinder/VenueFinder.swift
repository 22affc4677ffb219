import Foundation
import Strata

/// The BubbleTeaFinder feature: bubble-tea venues from Foursquare, filtered and sorted, over any Strata store.
public struct VenueFinder: Sendable {
  public let container: PersistentContainer

  public static let name = "BubbleTeaFinder"

  public static let types: [ManagedObject.Type] = [Venue.self, Location.self, PriceInfo.self, Stats.self, Category.self]

  public static let venuesByPriceTemplate = "VenuesByPrice"

  /// The current model (version "2" of ``migrationPlan()``).
  public static func makeModel() throws -> ObjectModel {
    let byPrice = FetchDescription(
      entityName: "Venue", predicate: try QueryPredicate(format: "priceInfo.priceCategory == $PRICE"))
    return try ObjectModel(types: types, fetchRequestTemplates: [venuesByPriceTemplate: byPrice])
  }

  /// A container of the current model with `store` loaded; a store written by an earlier version migrates
  /// when it opens.
  public static func makeContainer(store: StoreDescription, registry: StoreRegistry) throws -> PersistentContainer {
    let container = PersistentContainer(name: name, plan: try migrationPlan(), types: types, registry: registry)
    container.storeDescriptions = [store]
    try container.loadPersistentStores()
    return container
  }

  public init(container: PersistentContainer) {
    self.container = container
  }

  private var context: ObjectContext { container.viewContext }

  /// What ``seed(from:)`` did.
  public enum SeedOutcome: Sendable, Hashable {
    case imported(count: Int, file: String)
    /// The store already had venues, so nothing was imported.
    case alreadySeeded(venueCount: Int)
  }

  /// The seed file bundled with the module: 30 venues in New York, from Foursquare.
  public static func bundledSeedURL() throws -> URL {
    guard let url = Bundle.module.url(forResource: "seed", withExtension: "json") else {
      throw SeedError(file: "seed.json", problem: "is missing from the BubbleTeaFinder resources")
    }
    return url
  }

  /// Imports the venues of a Foursquare `venues/search` response (the bundled one without `url`) when
  /// the store has no venues yet.
  ///
  /// The whole file is decoded and checked before anything is inserted, and saved at once, so a bad
  /// file leaves the store as it was.
  ///
  /// - Throws: ``SeedError`` naming the file and the JSON path that is wrong; a `StoreError` when the
  ///   save fails.
  @discardableResult
  public func seed(from url: URL? = nil) throws -> SeedOutcome {
    let source = try url ?? Self.bundledSeedURL()
    let file = url?.path ?? source.lastPathComponent
    let seedFile = try SeedFile.read(source, named: file)
    let existing = try venueCount()
    guard existing == 0 else { return .alreadySeeded(venueCount: existing) }
    for venue in seedFile.venues { insert(venue) }
    do {
      // Decided by the store inside the write: another process seeding at the same time cannot double it.
      guard try context.save(ifStoreHasNo: Venue.self) else {
        context.rollback()
        return .alreadySeeded(venueCount: try venueCount())
      }
    } catch {
      context.rollback()
      throw error
    }
    return .imported(count: seedFile.venues.count, file: file)
  }

  private func insert(_ seed: SeedVenue) {
    let venue = Venue(context: context)
    venue.name = seed.name
    venue.phone = seed.contact?.phone
    venue.specialCount = seed.specials?.count ?? 0

    let location = Location(context: context)
    location.address = seed.location.address
    location.crossStreet = seed.location.crossStreet
    location.city = seed.location.city
    location.state = seed.location.state
    location.zipcode = seed.location.postalCode
    location.country = seed.location.country
    location.distance = seed.location.distance
    location.lat = seed.location.lat
    location.lng = seed.location.lng
    venue.location = location

    if let price = seed.price {
      let priceInfo = PriceInfo(context: context)
      priceInfo.priceCategory = PriceCategory(rawValue: price.currency) ?? .cheap
      venue.priceInfo = priceInfo
    }

    let stats = Stats(context: context)
    stats.checkinsCount = seed.stats.checkinsCount
    stats.usersCount = seed.stats.usersCount
    stats.tipCount = seed.stats.tipCount
    venue.stats = stats

    venue.categories = seed.categories?.map(\.name) ?? []
    if let first = seed.categories?.first {
      let category = Category(context: context)
      category.name = first.name
      venue.category = category
    }
  }

  /// The venues `filter` lets through, in `sort` order; the store does the filtering and sorting.
  public func venues(filter: VenueFilter = VenueFilter(), sort: VenueSort = .name) throws -> [VenueRecord] {
    try context.fetch(try Self.listRequest(filter, sort)).map(VenueRecord.init)
  }

  /// The same venues through an asynchronous fetch, read in chunks on a background context.
  public func venuesAsynchronously(
    filter: VenueFilter = VenueFilter(), sort: VenueSort = .name
  ) async throws
    -> [VenueRecord]
  {
    let background = container.newBackgroundContext()
    let request = AsynchronousFetchRequest(fetchRequest: try Self.listRequest(filter, sort), chunkSize: 10)
    let venues = try await background.fetch(request)
    return background.performAndWait { venues.map(VenueRecord.init) }
  }

  private static func listRequest(_ filter: VenueFilter, _ sort: VenueSort) throws -> FetchRequest<Venue> {
    var request = FetchRequest<Venue>(predicate: try filter.predicate(), sortDescriptors: sort.sortDescriptors)
    request.relationshipKeyPathsForPrefetching = ["location", "priceInfo", "stats", "category"]
    return request
  }

  /// How many venues the store holds.
  public func venueCount() throws -> Int {
    try context.count(for: FetchRequest<Venue>())
  }

  /// How many venues there are in each price category, and how many deals in all: counts of a format
  /// predicate and of a stored template, and a sum.
  public func stats() throws -> VenueStats {
    let cheap = try context.count(
      for: FetchRequest<Venue>(format: "priceInfo.priceCategory == %@", PriceCategory.cheap))
    let moderate = try context.count(
      for: FetchRequest<Venue>(format: "priceInfo.priceCategory == %@", PriceCategory.moderate))
    let expensive = try context.count(
      for: try container.model.fetchRequestFromTemplate(
        named: Self.venuesByPriceTemplate, substitutionVariables: ["PRICE": PriceCategory.expensive.rawValue],
        as: Venue.self))
    var dealsRequest = FetchRequest<Venue>()
    dealsRequest.propertiesToFetch = [try .expression("deals", format: "sum:(specialCount)", resultType: .int64)]
    let deals = try context.fetchDictionaries(dealsRequest).first?["deals"]
    return VenueStats(
      venues: try venueCount(), cheap: cheap, moderate: moderate, expensive: expensive,
      deals: Int(deals?.numericValue ?? 0))
  }

  /// Marks every venue a favorite with one batch update; returns how many were updated.
  public func favoriteAll() throws -> Int {
    let request = BatchRequest.update(entityName: "Venue", predicate: nil, propertiesToUpdate: ["favorite": .constant(true)])
    let result = try context.execute(request)
    ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [context])
    return result.count
  }

  /// Deletes the venues matching `format` (with their location, price, stats and category) with one
  /// batch delete; returns how many venues were deleted.
  public func deleteVenues(where format: String) throws -> Int {
    let request = BatchRequest.delete(entityName: "Venue", predicate: try QueryPredicate(format: format))
    let result = try context.execute(request)
    ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [context])
    return result.objectIDs.filter { $0.entityName == "Venue" }.count
  }
}

/// The numbers `stats` prints.
public struct VenueStats: Sendable, Hashable, Codable {
  public var venues: Int
  public var cheap: Int
  public var moderate: Int
  public var expensive: Int
  public var deals: Int
}
