import Foundation
import Strata

/// A venue as plain data, for output and tests.
public struct VenueRecord: Sendable, Hashable, Codable {
  public var name: String
  public var phone: String?
  public var specialCount: Int
  public var favorite: Bool
  public var priceCategory: String?
  public var distance: Int?
  public var address: String?
  public var crossStreet: String?
  public var city: String?
  public var state: String?
  public var zipcode: String?
  public var country: String?
  public var lat: Double?
  public var lng: Double?
  public var categoryName: String?
  /// Every Foursquare category of the venue, the primary one first.
  public var categories: [String]
  public var checkinsCount: Int?
  public var usersCount: Int?
  public var tipCount: Int?

  init(_ venue: Venue) {
    name = venue.name
    phone = venue.phone
    specialCount = venue.specialCount
    favorite = venue.favorite
    priceCategory = venue.priceInfo?.priceCategory.rawValue
    let location = venue.location
    distance = location?.distance
    address = location?.address
    crossStreet = location?.crossStreet
    city = location?.city
    state = location?.state
    zipcode = location?.zipcode
    country = location?.country
    lat = location?.lat
    lng = location?.lng
    categoryName = venue.category?.name
    categories = venue.categories
    let stats = venue.stats
    checkinsCount = stats?.checkinsCount
    usersCount = stats?.usersCount
    tipCount = stats?.tipCount
  }
}
