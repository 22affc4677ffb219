import Foundation
import Strata

/// Foursquare's price tiers, as its `price.currency` writes them.
public enum PriceCategory: String, Sendable, Hashable, CaseIterable, Codable, EnumAttribute {
  case cheap = "$"
  case moderate = "$$"
  case expensive = "$$$"
}

/// Which venues to list; every condition set must hold.
public struct VenueFilter: Sendable, Hashable {
  public var price: PriceCategory?
  /// Venues with at least one special offer.
  public var deals: Bool
  /// Venues less than ``walkingDistance`` metres away.
  public var walking: Bool
  /// Venues with at least one tip.
  public var tips: Bool
  /// Venues with a Foursquare category of this name, in any case and with or without accents.
  public var category: String?

  public static let walkingDistance = 500

  public init(
    price: PriceCategory? = nil, deals: Bool = false, walking: Bool = false, tips: Bool = false, category: String? = nil
  ) {
    self.price = price
    self.deals = deals
    self.walking = walking
    self.tips = tips
    self.category = category
  }

  /// The filter as a query predicate; `nil` when it lets every venue through.
  public func predicate() throws -> QueryPredicate? {
    var conditions: [QueryPredicate] = []
    if let price { conditions.append(try QueryPredicate(format: "priceInfo.priceCategory == %@", price)) }
    if deals { conditions.append(try QueryPredicate(format: "specialCount > 0")) }
    if walking { conditions.append(try QueryPredicate(format: "location.distance < %d", Self.walkingDistance)) }
    if tips { conditions.append(try QueryPredicate(format: "stats.tipCount > 0")) }
    if let category { conditions.append(try QueryPredicate(format: "ANY categories ==[cd] %@", category)) }
    switch conditions.count {
    case 0: return nil
    case 1: return conditions[0]
    default: return .and(conditions)
    }
  }
}

/// The order venues are listed in. Ties fall back to name, then distance, so every order is total.
public enum VenueSort: String, Sendable, Hashable, CaseIterable {
  case name
  case nameDescending = "name-desc"
  case distance
  case price

  public var sortDescriptors: [QuerySort] {
    let byName = QuerySort(\Venue.name, comparator: .localizedStandard)
    let byDistance = QuerySort(\Venue.location?.distance)
    switch self {
    case .name: return [byName, byDistance]
    case .nameDescending: return VenueSort.name.sortDescriptors.map(\.reversed)
    case .distance: return [byDistance, byName]
    case .price: return [QuerySort(\Venue.priceInfo?.priceCategory), byName, byDistance]
    }
  }
}
