import BubbleTeaFinder
import Foundation
import Strata
import StrataMemory
import StrataSQLite

enum Backend: String, CaseIterable, Sendable {
  case memory, sqlite

  func makeFinder(url: URL = temporaryStoreURL()) throws -> VenueFinder {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory()])
    let store = self == .memory ? StoreDescription(type: .memory) : StoreDescription(type: .sqlite, url: url)
    return VenueFinder(container: try VenueFinder.makeContainer(store: store, registry: registry))
  }
}

func temporaryStoreURL() -> URL {
  FileManager.default.temporaryDirectory.appending(path: "bubbletea-\(UUID().uuidString)/BubbleTeaFinder.sqlite")
}

func temporaryFile(_ name: String, contents: Data) throws -> URL {
  let directory = FileManager.default.temporaryDirectory.appending(path: "bubbletea-seed-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  let url = directory.appending(path: name)
  try contents.write(to: url)
  return url
}

/// The venues of seed.json read with JSONSerialization, independently of the code under test.
struct ExpectedVenue: Hashable {
  var name: String
  var price: String?
  var specialCount: Int
  var distance: Int
  var tipCount: Int

  static let seedURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/BubbleTeaFinder/Resources/seed.json")

  static func seedObject() throws -> [String: Any] {
    try JSONSerialization.jsonObject(with: Data(contentsOf: seedURL)) as? [String: Any] ?? [:]
  }

  static func seedVenues() throws -> [[String: Any]] {
    let response = try seedObject()["response"] as? [String: Any]
    return response?["venues"] as? [[String: Any]] ?? []
  }

  static func all() throws -> [ExpectedVenue] {
    try seedVenues().map { venue in
      ExpectedVenue(
        name: venue["name"] as? String ?? "",
        price: (venue["price"] as? [String: Any])?["currency"] as? String,
        specialCount: (venue["specials"] as? [String: Any])?["count"] as? Int ?? 0,
        distance: (venue["location"] as? [String: Any])?["distance"] as? Int ?? -1,
        tipCount: (venue["stats"] as? [String: Any])?["tipCount"] as? Int ?? -1)
    }
  }

  static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

  /// Finder order for these names (no digits, no accents): case-folded code points, then the original ones.
  static func nameOrder(_ a: ExpectedVenue, _ b: ExpectedVenue) -> Bool? {
    let (fa, fb) = (scalars(a.name.lowercased()), scalars(b.name.lowercased()))
    if fa != fb { return fa.lexicographicallyPrecedes(fb) }
    let (oa, ob) = (scalars(a.name), scalars(b.name))
    if oa != ob { return oa.lexicographicallyPrecedes(ob) }
    return nil
  }

  static func byName(_ a: ExpectedVenue, _ b: ExpectedVenue) -> Bool {
    nameOrder(a, b) ?? (a.distance < b.distance)
  }

  static func byDistance(_ a: ExpectedVenue, _ b: ExpectedVenue) -> Bool {
    a.distance != b.distance ? a.distance < b.distance : nameOrder(a, b) ?? false
  }

  static func byPrice(_ a: ExpectedVenue, _ b: ExpectedVenue) -> Bool {
    let (pa, pb) = (scalars(a.price ?? ""), scalars(b.price ?? ""))
    return pa != pb ? pa.lexicographicallyPrecedes(pb) : byName(a, b)
  }
}

extension VenueRecord {
  var summary: ExpectedVenue {
    ExpectedVenue(
      name: name, price: priceCategory, specialCount: specialCount, distance: distance ?? -1, tipCount: tipCount ?? -1)
  }
}
