import BubbleTeaFinder
import Foundation
import Strata
import StrataConformance
import StrataMemory
import Testing

@Suite("Stats and batch requests")
struct StatsAndBatchTests {
  @Test(arguments: Backend.allCases)
  func statsCountWhatTheJSONHolds(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let venues = try ExpectedVenue.all()
    let stats = try finder.stats()
    #expect(stats.venues == venues.count)
    #expect(stats.cheap == venues.filter { $0.price == "$" }.count)
    #expect(stats.moderate == venues.filter { $0.price == "$$" }.count)
    #expect(stats.expensive == venues.filter { $0.price == "$$$" }.count)
    #expect(stats.deals == venues.map(\.specialCount).reduce(0, +))
    #expect(stats.cheap > 0 && stats.moderate > 0 && stats.expensive > 0 && stats.deals > 0)
  }

  @Test(arguments: Backend.allCases)
  func favoriteAllUpdatesEveryVenueAndTheLiveContextSeesIt(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    #expect(try finder.venues().allSatisfy { !$0.favorite })
    #expect(try finder.favoriteAll() == ExpectedVenue.all().count)
    #expect(try finder.venues().allSatisfy(\.favorite))
  }

  @Test(arguments: Backend.allCases)
  func deleteRemovesTheMatchingVenuesAndTheirParts(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let venues = try ExpectedVenue.all()
    let far = venues.filter { $0.distance > 5000 }
    #expect(!far.isEmpty)
    #expect(try finder.deleteVenues(where: "location.distance > 5000") == far.count)
    #expect(Set(try finder.venues().map(\.name)) == Set(venues.filter { $0.distance <= 5000 }.map(\.name)))
    let context = finder.container.viewContext
    #expect(try context.count(for: FetchRequest<Location>()) == venues.count - far.count)
    #expect(try finder.deleteVenues(where: "location.distance > 5000") == 0)
  }

  @Test(arguments: Backend.allCases)
  func aBadDeletePredicateChangesNothing(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    for predicate in ["name ==", "rating > 3", "name > 3"] {
      expectStoreError(.invalidQuery, "\(predicate)") { try finder.deleteVenues(where: predicate) }
    }
    #expect(try finder.venueCount() == ExpectedVenue.all().count)
  }

  @Test func theTemplateIsPartOfTheModelAndCannotBeChangedThroughACopy() throws {
    let model = try VenueFinder.makeModel()
    var request = try model.fetchRequestTemplate(named: VenueFinder.venuesByPriceTemplate, as: Venue.self)
    request.predicate = nil
    #expect(try model.fetchRequestTemplate(named: VenueFinder.venuesByPriceTemplate, as: Venue.self).predicate != nil)
    expectStoreError(.invalidQuery) { try model.fetchRequestTemplate(named: "Nope", as: Venue.self) }
    expectStoreError(.invalidQuery) {
      try model.fetchRequestTemplate(named: VenueFinder.venuesByPriceTemplate, as: Location.self)
    }
    let preview = try VenueFinder.preview(registry: StoreRegistry([MemoryStoreFactory()]))
    let unbound = expectStoreError(.invalidQuery) {
      try preview.container.viewContext.fetch(
        try model.fetchRequestFromTemplate(named: VenueFinder.venuesByPriceTemplate, substitutionVariables: [:], as: Venue.self))
    }
    #expect(unbound?.message.contains("PRICE") == true, "\(unbound?.message ?? "")")
  }
}
