import Testing

@testable import Strata

/// ``IDPositions`` finds the position of each ID as `firstIndex(of:)` does, whichever lookup it picks:
/// dense keys (a table by key), sparse keys (binary search), IDs of several entities or temporary ones (a
/// dictionary); repeated IDs answer their first position, and IDs not in the list (another entity, another
/// store, a key outside the range or between keys) answer `nil`.
@Suite struct IDPositionsTests {
  static func movie(_ key: Int64, store: String = "S") -> ObjectID {
    ObjectID(entityName: "Movie", storeIdentifier: store, primaryKey: key)
  }

  static func expectPositions(_ ids: [ObjectID], probes: [ObjectID]) {
    let positions = IDPositions(ids)
    for id in ids + probes {
      #expect(positions.position(of: id) == ids.firstIndex(of: id), "\(id)")
    }
  }

  static let strangers = [
    ObjectID(entityName: "Director", storeIdentifier: "S", primaryKey: 3), movie(3, store: "T"),
    ObjectID.makeTemporary(entityName: "Movie"), movie(-5), movie(0), movie(Int64.max), movie(Int64.min),
  ]

  @Test func denseKeys() {
    let ids = [7, 3, 4, 5, 9, 3, 12].map { Self.movie($0) }
    Self.expectPositions(ids, probes: Self.strangers + [Self.movie(6), Self.movie(2), Self.movie(13)])
  }

  @Test func sparseKeys() {
    let ids = [1_000_000, 5, 77_777, 5, 300, Int64.max, Int64.min + 1].map { Self.movie($0) }
    Self.expectPositions(ids, probes: Self.strangers + [Self.movie(6), Self.movie(299), Self.movie(1_000_001)])
  }

  @Test func mixedEntitiesAndTemporaryIDs() {
    let temporary = ObjectID.makeTemporary(entityName: "Movie")
    let ids = [
      Self.movie(1), ObjectID(entityName: "Director", storeIdentifier: "S", primaryKey: 1), temporary, Self.movie(2),
      temporary, Self.movie(1, store: "T"),
    ]
    Self.expectPositions(ids, probes: Self.strangers + [Self.movie(3)])
  }

  @Test func noIDs() {
    #expect(IDPositions([]).position(of: Self.movie(1)) == nil)
  }
}
