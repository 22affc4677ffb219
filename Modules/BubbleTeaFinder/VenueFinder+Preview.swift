import Foundation
import Strata

extension VenueFinder {
  /// A finder over a new in-memory store holding the bundled seed venues: the preview fixture.
  /// The composition root registers the `memory` store type.
  public static func preview(registry: StoreRegistry = .shared) throws -> VenueFinder {
    let finder = VenueFinder(container: try makeContainer(store: StoreDescription(type: "memory"), registry: registry))
    try finder.seed()
    return finder
  }
}
