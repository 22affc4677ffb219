import Foundation
import Strata

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

extension FireballWatch {
  /// What an import did: fireballs new to the store, stored ones whose values changed, and stored ones
  /// the data repeats as they are (not written).
  public struct ImportSummary: Sendable, Hashable, Codable {
    public var inserted: Int
    public var updated: Int
    public var unchanged: Int

    public init(inserted: Int, updated: Int, unchanged: Int) {
      self.inserted = inserted
      self.updated = updated
      self.unchanged = unchanged
    }
  }

  /// The JPL snapshot bundled with the module (the API's default answer of 21 March 2024).
  public static func bundledSnapshotURL() throws -> URL {
    guard let url = Bundle.module.url(forResource: "fireball-api-default-2024-03-21", withExtension: "json") else {
      throw StoreError(.notFound, "fireball-api-default-2024-03-21.json is missing from the FireballWatch resources")
    }
    return url
  }

  /// The fireballs of a JPL Fireball API response read from `url`: a file, or an `https:` address.
  /// - Throws: ``FireballDataError`` naming the source, and the row at fault when there is one.
  public static func records(from url: URL) async throws -> [FireballRecord] {
    let source = url.isFileURL ? url.path : url.absoluteString
    let data: Data
    do {
      data = url.isFileURL ? try Data(contentsOf: url) : try await download(url)
    } catch let error as FireballDataError {
      throw error
    } catch {
      throw FireballDataError(source: source, reason: "cannot be read: \(error.localizedDescription)")
    }
    if let invalid = InvalidUTF8.first(in: data) {
      throw FireballDataError(source: source, reason: "not UTF-8 text: \(invalid)")
    }
    do {
      return try FireballData.decode(data)
    } catch var error as FireballDataError {
      error.source = source
      throw error
    }
  }

  private static func download(_ url: URL) async throws -> Data {
    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let (data, response) = try await session.data(from: url)
    if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
      throw FireballDataError(source: url.absoluteString, reason: "the server answered HTTP \(http.statusCode)")
    }
    return data
  }

  /// Imports the fireballs of a JPL Fireball API response at `url` (default: the bundled snapshot).
  /// The whole response is checked first; a bad one imports nothing.
  @discardableResult
  public func importFireballs(from url: URL? = nil, progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> ImportSummary
  {
    try await importFireballs(try await Self.records(from: url ?? Self.bundledSnapshotURL()), progress: progress)
  }

  /// Upserts `records` in one batch insert, keyed by `dateTimeStamp`, from a context whose transaction
  /// author is ``importAuthor``. Records the store already holds with the same values are not written.
  ///
  /// - Parameter progress: hears (written, to write) as the store takes each row.
  /// - Throws: a `StoreError` when the batch fails; the store is then unchanged.
  @discardableResult
  public func importFireballs(
    _ records: [FireballRecord], progress: (@Sendable (Int, Int) -> Void)? = nil
  ) async throws -> ImportSummary {
    let summary = try await container.performBackgroundTask { context in
      context.transactionAuthor = Self.importAuthor
      let stored = Dictionary(
        try context.fetch(FetchRequest<Fireball>()).map { ($0.dateTimeStamp, FireballRecord($0)) },
        uniquingKeysWith: { first, _ in first })
      let rows = records.filter { stored[$0.dateTimeStamp] != $0 }.map(\.row)
      guard !rows.isEmpty else {
        return (summary: ImportSummary(inserted: 0, updated: 0, unchanged: records.count), changes: ContextDidSave?.none)
      }
      let next = Locked(0)
      let request = BatchInsertRequest<Fireball>(resultType: .objectIDs) { row in
        let index = next.withLock { index in
          defer { index += 1 }
          return index
        }
        guard index < rows.count else { return true }
        row = rows[index]
        progress?(index + 1, rows.count)
        return false
      }
      let result = try context.execute(request)
      // Rows another import stored meanwhile with the same values are unchanged too: the store wrote nothing.
      let updated = result.updatedObjectIDs.count
      return (
        summary: ImportSummary(
          inserted: result.objectIDs.count - updated, updated: updated,
          unchanged: records.count - rows.count + result.unchangedObjectIDs.count),
        changes: Optional(result.changes(of: request))
      )
    }
    if let changes = summary.changes {
      ObjectContext.mergeChanges(fromRemoteContextSave: changes, into: [context])
    }
    return summary.summary
  }
}
