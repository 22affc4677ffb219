import FireballWatch
import Foundation
import Strata
import Testing

@Suite("FireballWatch batch requests and derived counts")
struct FireballBatchTests {
  @Test(arguments: Backend.allCases)
  func aBatchDeleteOfAGroupedFireballLowersTheCount(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    try await watch.importFireballs()
    let dates = try watch.fireballs(FireballQuery(limit: 3)).map(\.dateTimeStamp)
    try watch.createGroup("Recent")
    try watch.add(dates, toGroup: "Recent")
    let context = watch.container.newBackgroundContext()
    let result = try context.performAndWait {
      try context.execute(
        .delete(entityName: "Fireball", predicate: try QueryPredicate(format: "dateTimeStamp == %@", dates[0])))
    }
    #expect(result.objectIDs.count == 1)
    #expect(try FireballWatch(container: watch.container).groups() == [FireballGroupRecord(name: "Recent", fireballCount: 2)])
    #expect(try FireballWatch(container: watch.container).fireballs(inGroup: "Recent").count == 2)
  }

  @Test(arguments: Backend.allCases)
  func anUpsertOfAGroupedFireballKeepsItInTheGroup(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    try await watch.importFireballs()
    var newest = try #require(try watch.fireballs(FireballQuery(limit: 1)).first)
    try watch.createGroup("Newest")
    try watch.add([newest.dateTimeStamp], toGroup: "Newest")
    newest.velocity = 99
    #expect(try await watch.importFireballs([newest]) == FireballWatch.ImportSummary(inserted: 0, updated: 1, unchanged: 0))
    let fresh = FireballWatch(container: watch.container)
    #expect(try fresh.groups() == [FireballGroupRecord(name: "Newest", fireballCount: 1)])
    #expect(try fresh.fireballs(inGroup: "Newest") == [newest])
    #expect(try watch.fireball(at: newest.dateTimeStamp).velocity == 99, "the import is merged into the watch's context")
  }
}
