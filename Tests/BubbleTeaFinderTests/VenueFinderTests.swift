import BubbleTeaFinder
import Foundation
import Strata
import StrataMemory
import Testing

@Suite("BubbleTeaFinder")
struct VenueFinderTests {
  @Test(arguments: Backend.allCases)
  func seedMapsTheFoursquareFields(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    #expect(try finder.seed() == .imported(count: 30, file: "seed.json"))
    let venues = try finder.venues()
    #expect(venues.count == 30)

    let kungFu = try #require(venues.first { $0.name == "Kung Fu Tea 功夫茶" && $0.distance == 4787 })
    #expect(kungFu.phone == "2123343536")
    #expect(kungFu.specialCount == 0)
    #expect(kungFu.favorite == false)
    #expect(kungFu.priceCategory == "$")
    #expect(kungFu.address == "234 Canal St")
    #expect(kungFu.crossStreet == "at Centre St.")
    #expect(kungFu.city == "New York")
    #expect(kungFu.state == "NY")
    #expect(kungFu.zipcode == "10013")
    #expect(kungFu.country == "United States")
    #expect(kungFu.lat == 40.717854)
    #expect(kungFu.lng == -74.000208)
    #expect(kungFu.categoryName == "Bubble Tea Shop")
    #expect(kungFu.checkinsCount == 6820)
    #expect(kungFu.usersCount == 3530)
    #expect(kungFu.tipCount == 60)

    let bao = try #require(venues.first { $0.name == "The Bao Shoppe" })
    #expect(bao.priceCategory == "$$$")
    #expect(bao.city == "Astoria")
    #expect(bao.zipcode == "11103")
    #expect(bao.phone == "7187771883")
    #expect(bao.distance == 5760)

    let cityWings = try #require(venues.first { $0.name == "City Wings Cafe" })
    #expect(cityWings.specialCount == 4)
    #expect(cityWings.distance == 2711)

    let monkeyKing = try #require(venues.first { $0.name == "Monkey King" })
    #expect(monkeyKing.phone == nil)
    #expect(monkeyKing.zipcode == nil)
    #expect(monkeyKing.city == "Queens")
    #expect(monkeyKing.checkinsCount == 15)
  }

  @Test(arguments: Backend.allCases)
  func everyVenueMatchesTheJSON(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let stored = try finder.venues().map(\.summary)
    #expect(Set(stored) == Set(try ExpectedVenue.all()))
  }

  @Test(arguments: Backend.allCases)
  func seedingTwiceAddsNothing(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    #expect(try finder.seed() == .alreadySeeded(venueCount: 30))
    #expect(try finder.venueCount() == 30)
  }

  @Test func sqliteStorePersistsAcrossContainers() throws {
    let url = temporaryStoreURL()
    let first = try Backend.sqlite.makeFinder(url: url)
    try first.seed()
    first.container.close()
    let second = try Backend.sqlite.makeFinder(url: url)
    #expect(try second.venueCount() == 30)
    #expect(try second.seed() == .alreadySeeded(venueCount: 30))
  }

  @Test func previewHoldsTheSeedVenues() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let preview = try VenueFinder.preview(registry: registry)
    #expect(try preview.venues().map(\.summary) == (try ExpectedVenue.all()).sorted(by: ExpectedVenue.byName))
  }
}

@Suite("BubbleTeaFinder filters and sorts")
struct VenueQueryTests {
  static let filters: [VenueFilter] = [
    VenueFilter(),
    VenueFilter(price: .cheap), VenueFilter(price: .moderate), VenueFilter(price: .expensive),
    VenueFilter(deals: true), VenueFilter(walking: true), VenueFilter(tips: true),
    VenueFilter(price: .cheap, deals: true), VenueFilter(price: .moderate, tips: true),
    VenueFilter(price: .cheap, deals: true, walking: true, tips: true),
  ]

  static func expected(_ filter: VenueFilter, _ venues: [ExpectedVenue]) -> [ExpectedVenue] {
    venues.filter { venue in
      (filter.price.map { venue.price == $0.rawValue } ?? true)
        && (!filter.deals || venue.specialCount > 0)
        && (!filter.walking || venue.distance < 500)
        && (!filter.tips || venue.tipCount > 0)
    }
  }

  static func expected(_ sort: VenueSort, _ venues: [ExpectedVenue]) -> [ExpectedVenue] {
    switch sort {
    case .name: venues.sorted(by: ExpectedVenue.byName)
    case .nameDescending: venues.sorted(by: ExpectedVenue.byName).reversed()
    case .distance: venues.sorted(by: ExpectedVenue.byDistance)
    case .price: venues.sorted(by: ExpectedVenue.byPrice)
    }
  }

  @Test(arguments: Backend.allCases)
  func everyFilterSelectsWhatTheJSONSays(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let all = try ExpectedVenue.all()
    for filter in Self.filters {
      let found = try finder.venues(filter: filter).map(\.summary)
      #expect(found == Self.expected(.name, Self.expected(filter, all)), "\(filter)")
    }
  }

  @Test func theSeedDataGivesTheFiltersSomethingToDo() throws {
    let all = try ExpectedVenue.all()
    #expect(Self.expected(VenueFilter(price: .moderate), all).map(\.name).sorted() == ["Chatime 日出茶太", "CoCo Fresh Tea & Juice"])
    #expect(Self.expected(VenueFilter(price: .expensive), all).map(\.name) == ["The Bao Shoppe"])
    #expect(Self.expected(VenueFilter(deals: true), all).count == 6)
  }

  @Test(arguments: Backend.allCases, VenueSort.allCases)
  func everySortOrdersAsTheJSONSays(_ backend: Backend, _ sort: VenueSort) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let found = try finder.venues(sort: sort).map(\.summary)
    #expect(found == Self.expected(sort, try ExpectedVenue.all()))
  }

  @Test(arguments: Backend.allCases)
  func sortsAndFiltersCombine(_ backend: Backend) throws {
    let finder = try backend.makeFinder()
    try finder.seed()
    let all = try ExpectedVenue.all()
    let filter = VenueFilter(price: .cheap, deals: true)
    for sort in VenueSort.allCases {
      #expect(try finder.venues(filter: filter, sort: sort).map(\.summary) == Self.expected(sort, Self.expected(filter, all)))
    }
  }

  @Test func nameOrderIsFinderOrder() throws {
    let finder = try Backend.memory.makeFinder()
    try finder.seed()
    let names = try finder.venues(sort: .name).map(\.name)
    let distinct = names.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
    #expect(
      Array(distinct.prefix(8)) == [
        "Boba Life NYC", "Boi Noodles", "Bubbly Tea", "Chatime", "Chatime 日出茶太", "City Wings Cafe",
        "CoCo Fresh Tea & Juice", "Coco Fresh Tea & Juice",
      ])
    #expect(try finder.venues(sort: .nameDescending).map(\.name) == names.reversed())
  }

  @Test(arguments: Backend.allCases)
  func boundariesOfWalkingTipsAndDeals(_ backend: Backend) throws {
    let venues: [[String: Any]] = [
      venue("Near", distance: 499, tips: 0, specials: 0, price: "$"),
      venue("At the line", distance: 500, tips: 1, specials: 1, price: "$$"),
      venue("Close, no price", distance: 10, tips: 2, specials: 2, price: nil),
      venue("Far", distance: 9000, tips: 0, specials: 0, price: "$$$"),
    ]
    let url = try temporaryFile("small.json", contents: try seedJSON(venues))
    let finder = try backend.makeFinder()
    #expect(try finder.seed(from: url) == .imported(count: 4, file: url.path))
    #expect(try finder.venues(filter: VenueFilter(walking: true)).map(\.name) == ["Close, no price", "Near"])
    #expect(try finder.venues(filter: VenueFilter(tips: true)).map(\.name) == ["At the line", "Close, no price"])
    #expect(
      try finder.venues(filter: VenueFilter(deals: true), sort: .distance).map(\.name) == ["Close, no price", "At the line"])
    #expect(try finder.venues(filter: VenueFilter(deals: true, walking: true, tips: true)).map(\.name) == ["Close, no price"])
    #expect(try finder.venues(filter: VenueFilter(price: .cheap, walking: true)).map(\.name) == ["Near"])
    #expect(try finder.venues(sort: .price).map(\.name) == ["Close, no price", "Near", "At the line", "Far"])
    let unpriced = try #require(try finder.venues().first { $0.name == "Close, no price" })
    #expect(unpriced.priceCategory == nil && unpriced.phone == nil && unpriced.categoryName == nil)
  }
}

func venue(_ name: String, distance: Int, tips: Int, specials: Int, price: String?) -> [String: Any] {
  var venue: [String: Any] = [
    "name": name,
    "location": ["distance": distance, "city": "New York"],
    "stats": ["checkinsCount": 1, "usersCount": 1, "tipCount": tips],
    "specials": ["count": specials, "items": [Any]()],
  ]
  if let price { venue["price"] = ["currency": price, "tier": price.count] }
  return venue
}

func seedJSON(_ venues: [[String: Any]]) throws -> Data {
  try JSONSerialization.data(withJSONObject: ["meta": ["code": 200], "response": ["venues": venues]])
}
