import FireballWatch
import Foundation
import Strata
import Testing

@Suite("FireballWatch list and groups")
struct FireballListAndGroupTests {
  static func byDescending(_ key: KeyPath<FireballRecord, Double?>) -> (FireballRecord, FireballRecord) -> Bool {
    { a, b in
      switch (a[keyPath: key], b[keyPath: key]) {
      case (let x?, let y?) where x != y: x > y
      case (_?, nil): true
      case (nil, _?): false
      default: a.dateTimeStamp > b.dateTimeStamp
      }
    }
  }

  @Test(arguments: Backend.allCases)
  func listsNewestFirstOrMostEnergeticFirstFilteredAndLimited(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    let records = try JPLFile(JPLFile.shipped).records()
    #expect(records.allSatisfy { $0.radiatedEnergy != nil && $0.impactEnergy != nil }, "no nils to place in these sorts")
    try await watch.importFireballs()
    #expect(try watch.fireballs() == records.newestFirst)
    #expect(try watch.fireballs(FireballQuery(limit: 10)) == Array(records.newestFirst.prefix(10)))
    #expect(try watch.fireballs(FireballQuery(sort: .energy)) == records.sorted(by: Self.byDescending(\.radiatedEnergy)))
    #expect(
      try watch.fireballs(FireballQuery(sort: .impact, limit: 5))
        == Array(records.sorted(by: Self.byDescending(\.impactEnergy)).prefix(5)))
    let strong = records.filter { ($0.impactEnergy ?? 0) >= 1.5 }
    #expect(!strong.isEmpty && strong.count < records.count)
    #expect(try watch.fireballs(FireballQuery(minimumImpactEnergy: 1.5)) == strong.newestFirst)
    #expect(
      try watch.fireballs(FireballQuery(sort: .impact, minimumImpactEnergy: 1.5, limit: 3))
        == Array(strong.sorted(by: Self.byDescending(\.impactEnergy)).prefix(3)))
    #expect(try watch.fireballs(FireballQuery(minimumImpactEnergy: 1e9)).isEmpty)
  }

  @Test(arguments: Backend.allCases)
  func groupsCountTheirFireballsAsTheyChange(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    try await watch.importFireballs()
    let dates = try watch.fireballs(FireballQuery(limit: 4)).map(\.dateTimeStamp)
    #expect(try watch.createGroup("Recent") == FireballGroupRecord(name: "Recent", fireballCount: 0))
    #expect(try watch.createGroup("  Oldies ") == FireballGroupRecord(name: "Oldies", fireballCount: 0))
    #expect(try watch.add(Array(dates.prefix(3)), toGroup: "Recent").fireballCount == 3)
    #expect(try watch.add([dates[0], dates[3]], toGroup: "Recent").fireballCount == 4)
    #expect(try watch.remove([dates[1]], fromGroup: "Recent").fireballCount == 3)
    #expect(try watch.add([dates[0]], toGroup: "Oldies").fireballCount == 1)
    let expected = [FireballGroupRecord(name: "Oldies", fireballCount: 1), FireballGroupRecord(name: "Recent", fireballCount: 3)]
    #expect(try watch.groups() == expected)
    #expect(try FireballWatch(container: watch.container).groups() == expected)
    #expect(try watch.fireballs(inGroup: "Recent").map(\.dateTimeStamp) == [dates[0], dates[2], dates[3]])

    try watch.delete(at: dates[0])
    let afterDelete = [
      FireballGroupRecord(name: "Oldies", fireballCount: 0), FireballGroupRecord(name: "Recent", fireballCount: 2),
    ]
    #expect(try watch.groups() == afterDelete)
    #expect(try FireballWatch(container: watch.container).groups() == afterDelete)
    #expect(try watch.fireballs(inGroup: "Recent").map(\.dateTimeStamp) == [dates[2], dates[3]])

    try await watch.importFireballs()
    #expect(try watch.groups() == afterDelete, "re-importing the deleted fireball does not put it back in groups")
  }

  @Test(arguments: Backend.allCases)
  func badGroupEditsNameTheProblemAndChangeNothing(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    try await watch.importFireballs()
    let dates = try watch.fireballs(FireballQuery(limit: 2)).map(\.dateTimeStamp)
    try watch.createGroup("Recent")
    try watch.createGroup("Bright")
    try watch.add([dates[0]], toGroup: "Recent")
    let groups = try watch.groups()
    let count = try watch.fireballCount()
    let unknownDate = try #require(FireballDate.parse("2001-01-01 00:00:00"))
    let attempts: [(String, StoreError.Code, String, (FireballWatch) throws -> Void)] = [
      ("duplicate", .constraintConflict, "a group named 'Recent' exists already", { try $0.createGroup("Recent") }),
      ("empty name", .validation, "a group name must not be empty", { try $0.createGroup("  ") }),
      ("unknown group", .notFound, "no group is named 'Nope'", { try $0.add([dates[1]], toGroup: "Nope") }),
      ("unknown group", .notFound, "no group is named 'Nope'", { try $0.remove([dates[0]], fromGroup: "Nope") }),
      ("unknown group", .notFound, "no group is named 'Nope'", { try $0.renameGroup("Nope", to: "Yes") }),
      ("unknown group", .notFound, "no group is named 'Nope'", { try $0.deleteGroup("Nope") }),
      ("rename onto another", .constraintConflict, "exists already", { try $0.renameGroup("Recent", to: "Bright") }),
      ("two lines", .validation, "a group name must be one line", { try $0.createGroup("a\nb") }),
      (
        "unknown date", .notFound, "no fireball was seen at 2001-01-01 00:00:00",
        { try $0.add([dates[1], unknownDate], toGroup: "Recent") }
      ),
      ("unknown date", .notFound, "2001-01-01 00:00:00", { try $0.delete(at: unknownDate) }),
    ]
    for (name, code, message, attempt) in attempts {
      do {
        try attempt(watch)
        Issue.record("\(name) should fail")
      } catch let error as StoreError {
        #expect(error.code == code, "\(name)")
        #expect(error.message.contains(message), "\(name): \(error.message)")
      }
    }
    #expect(try watch.groups() == groups)
    #expect(try watch.fireballCount() == count)
    #expect(try watch.fireballs(inGroup: "Recent").map(\.dateTimeStamp) == [dates[0]])
  }

  @Test func datesAreExactlyJPLsFormatInUTC() throws {
    let date = try #require(FireballDate.parse("2024-02-29 23:59:59"))
    #expect(date.timeIntervalSince1970 == 1_709_251_199)
    #expect(FireballDate.string(from: date) == "2024-02-29 23:59:59")
    #expect(FireballDate.iso8601(date) == "2024-02-29T23:59:59Z")
    #expect(FireballDate.parse(FireballDate.iso8601(date)) == date, "the ISO form the JSON prints reads back")
    for bad in [
      "2023-02-29 00:00:00", "2024-02-29", "2024-02-29T23:59:59", "2024-2-29 23:59:59", "2024-02-29 24:00:00",
      " 2024-02-29 23:59:5", "２０２４-02-29 23:59:59", "2024-02-29 23:59:59Z", "2024-02-29T23:59:59+01:00",
      "2023-02-29T00:00:00Z",
    ] {
      #expect(FireballDate.parse(bad) == nil, "\(bad)")
    }
  }
}
