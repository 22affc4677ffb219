import BubbleTeaFinder
import Foundation
import Strata
import StrataMemory
import StrataSQLite
import Testing

@Suite("BubbleTeaFinder categories")
struct CategoryTests {
  /// Each seed venue's (name, distance) and category names, read with JSONSerialization.
  static func seedCategories() throws -> [(name: String, distance: Int, categories: [String])] {
    try ExpectedVenue.seedVenues().map { venue in
      let categories = (venue["categories"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
      return (
        venue["name"] as? String ?? "", (venue["location"] as? [String: Any])?["distance"] as? Int ?? -1, categories
      )
    }
  }

  @Test(arguments: Backend.allCases)
  func everyCategoryOfTheSeedIsStored(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let stored = try finder.venues().map { "\($0.name)|\($0.distance ?? -1)|\($0.categories)" }.sorted()
    let expected = try Self.seedCategories().map { "\($0.name)|\($0.distance)|\($0.categories)" }.sorted()
    #expect(stored == expected)
  }

  @Test(arguments: Backend.allCases)
  func categoryMatchesAnyCategoryInAnyCaseWithOrWithoutAccents(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    for query in ["bubble tea shop", "CAFE", "café", "Tea Room", "Creperie", "tea", "nothing"] {
      let found = try finder.venues(filter: VenueFilter(category: query)).map(\.name).sorted()
      let expected = try Self.seedCategories().filter { venue in
        venue.categories.contains {
          $0.compare(query, options: [.caseInsensitive, .diacriticInsensitive]) == .orderedSame
        }
      }.map(\.name).sorted()
      #expect(found == expected, "--category \(query)")
    }
    let cheapTea = try finder.venues(filter: VenueFilter(price: .cheap, category: "bubble tea shop"))
    #expect(!cheapTea.isEmpty && cheapTea.allSatisfy { $0.priceCategory == "$" && $0.categories == ["Bubble Tea Shop"] })
  }

  @Test func versionOneIsTheModelStoresWereWrittenWith() throws {
    let plan = try VenueFinder.migrationPlan()
    #expect(plan.versions.map(\.name) == ["1", "2"])
    // The fingerprint of the model before categories were added (computed with that code).
    #expect(plan.versions[0].model.fingerprint == "8a9c4e7ea960fc03")
    #expect(plan.current.model == (try VenueFinder.makeModel()))
  }

  @Test func aVersionOneStoreMigratesAndGetsCategoriesFromTheSeed() throws {
    let url = temporaryStoreURL()
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory()])
    let plan = try VenueFinder.migrationPlan()
    do {
      let old = PersistentContainer(name: VenueFinder.name, model: plan.versions[0].model, registry: registry)
      old.storeDescriptions = [StoreDescription(type: .sqlite, url: url)]
      try old.loadPersistentStores()
      let context = old.viewContext
      for (name, category) in [("Teado", "Tea Room"), ("Not In The Seed", "Juice Bar"), ("No Category", nil)] {
        let venue = try context.insertObject(entityName: "Venue")
        try venue.setValue(name, forKey: "name")
        try venue.setValue(7, forKey: "specialCount")
        if let category {
          let row = try context.insertObject(entityName: "Category")
          try row.setValue(category, forKey: "name")
          try venue.setValue(row, forKey: "category")
        }
      }
      try context.save()
      old.close()
    }
    let finder = VenueFinder(
      container: try VenueFinder.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    let seedTeado = try #require(try Self.seedCategories().first { $0.name == "Teado" })
    let categories = Dictionary(uniqueKeysWithValues: try finder.venues().map { ($0.name, $0.categories) })
    #expect(categories == ["Teado": seedTeado.categories, "Not In The Seed": ["Juice Bar"], "No Category": []])
    #expect(try finder.venues(filter: VenueFilter(category: "juice bar")).map(\.name) == ["Not In The Seed"])
  }

  @Test(arguments: Backend.allCases)
  func anUnknownPriceTierIsAClearErrorAndChangesNothing(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let context = finder.container.viewContext
    _ = try context.execute(
      BatchRequest.update(
        entityName: "PriceInfo", predicate: try QueryPredicate(format: "venue.name == 'The Bao Shoppe'"),
        propertiesToUpdate: ["priceCategory": .constant("$$$$")]))
    context.reset()
    do {
      _ = try finder.venues()
      Issue.record("a price tier the enum does not know must not be read")
    } catch let error as StoreError {
      #expect(error.code == .corrupted)
      #expect(error.entity == "PriceInfo" && error.key == "priceCategory", "\(error.message)")
      #expect(error.message.contains("$$$$"), "\(error.message)")
    }
    #expect(try finder.venueCount() == 30)
    #expect(
      try finder.venues(filter: VenueFilter(price: .cheap)).count == (try ExpectedVenue.all().filter { $0.price == "$" }.count))
  }
}
