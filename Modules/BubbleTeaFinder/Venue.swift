import Foundation
import Strata

public final class Venue: ManagedObject {
  @Attribute public var name: String
  @Attribute public var phone: String?
  @Attribute public var specialCount: Int
  @Attribute public var favorite: Bool = false
  @Attribute public var categories: [String]
  @Relationship(inverse: "venue", deleteRule: .cascade) public var location: Location?
  @Relationship(inverse: "venue", deleteRule: .cascade) public var priceInfo: PriceInfo?
  @Relationship(inverse: "venue", deleteRule: .cascade) public var stats: Stats?
  @Relationship(inverse: "venue", deleteRule: .cascade) public var category: Category?
}

public final class Location: ManagedObject {
  @Attribute public var address: String?
  @Attribute public var crossStreet: String?
  @Attribute public var city: String?
  @Attribute public var state: String?
  @Attribute public var zipcode: String?
  @Attribute public var country: String?
  @Attribute public var distance: Int
  @Attribute public var lat: Double?
  @Attribute public var lng: Double?
  @Relationship(inverse: "location") public var venue: Venue?
}

public final class PriceInfo: ManagedObject {
  @Attribute public var priceCategory: PriceCategory
  @Relationship(inverse: "priceInfo") public var venue: Venue?
}

public final class Stats: ManagedObject {
  @Attribute public var checkinsCount: Int
  @Attribute public var usersCount: Int
  @Attribute public var tipCount: Int
  @Relationship(inverse: "stats") public var venue: Venue?
}

public final class Category: ManagedObject {
  @Attribute public var name: String
  @Relationship(inverse: "category") public var venue: Venue?
}
