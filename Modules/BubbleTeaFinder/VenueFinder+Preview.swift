import Foundation
import Strata

extension VenueFinder {
  /// A finder over a new in-memory store holding the bundled seed venues: the preview fixture.
  /// `registry` must offer the memory store type (the composition root passes one that does).
  public static func preview(registry: StoreRegistry) throws -> VenueFinder {
    let finder = VenueFinder(container: try makeContainer(store: StoreDescription(type: .memory), registry: registry))
    try finder.seed()
    return finder
  }
}
