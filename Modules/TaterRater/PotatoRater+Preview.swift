import Foundation
import Strata

extension PotatoRater {
  /// The ten potatoes of the preview fixture.
  public static let previewPotatoes: [PotatoRecord] = [
    PotatoRecord(variety: "Adirondack Blue", crowdRating: 3.4),
    PotatoRecord(variety: "Bintje", crowdRating: 2.0, userRating: 2),
    PotatoRecord(variety: "Cara", crowdRating: 4.1),
    PotatoRecord(variety: "Chérie", crowdRating: 3.8, userRating: 4, notes: "Pink skin; firm in salads"),
    PotatoRecord(variety: "Désirée", crowdRating: 4.5, userRating: 5, notes: "Roasts beautifully"),
    PotatoRecord(variety: "Estima", crowdRating: 2.9),
    PotatoRecord(variety: "King Edward", crowdRating: 3.6, userRating: 3),
    PotatoRecord(variety: "Maris Piper", crowdRating: 4.2, userRating: 5, notes: "Chips"),
    PotatoRecord(variety: "Russet Burbank", crowdRating: 3.1),
    PotatoRecord(variety: "Yukon Gold", crowdRating: 4.7, userRating: 1),
  ]

  /// A rater over a new in-memory store holding ``previewPotatoes``: the preview fixture.
  /// `registry` must offer the memory store type (the composition root passes one that does).
  public static func preview(registry: StoreRegistry) throws -> PotatoRater {
    let container = try makeContainer(store: StoreDescription(type: .memory), registry: registry)
    let rater = PotatoRater(container: container)
    let context = container.newBackgroundContext()
    try context.performAndWait {
      for potato in previewPotatoes { rater.insert(potato, into: context) }
      try context.save()
    }
    return rater
  }
}
