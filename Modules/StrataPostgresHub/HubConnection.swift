import CLibPQ
import Foundation
import StrataMirroring

/// One libpq connection of the hub, text parameters and text results: the hub's few statements need no
/// more (its payloads are JSON). Unchecked `Sendable`: the hub uses it only under its lock.
final class HubConnection: @unchecked Sendable {
  /// One statement and its text parameters (`nil` is SQL NULL).
  typealias Statement = (sql: String, parameters: [String?])

  private let handle: OpaquePointer
  /// Set when a pipeline ended in a state the connection cannot go on from: it is then broken.
  private var isAbandoned = false

  /// Connects with `conninfo` (a libpq URI or key/value string).
  ///
  /// - Throws: `MirrorError.hubUnreachable` with libpq's reason (never the URI, which may hold a
  ///   password).
  init(_ conninfo: String) throws {
    guard let handle = PQconnectdb(conninfo) else {
      throw MirrorError.hubUnreachable("libpq could not allocate a connection")
    }
    guard PQstatus(handle) == CONNECTION_OK else {
      let reason = Self.message(PQerrorMessage(handle))
      PQfinish(handle)
      throw MirrorError.hubUnreachable(reason)
    }
    self.handle = handle
  }

  deinit { PQfinish(handle) }

  var isBroken: Bool { isAbandoned || PQstatus(handle) != CONNECTION_OK }

  /// Runs `sql` with text parameters (`nil` is SQL NULL); returns the rows as text (`nil` for NULL).
  ///
  /// - Throws: `MirrorError.hubUnreachable` when the connection is lost, `MirrorError.hubFailed`
  ///   when the statement fails.
  @discardableResult
  func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
    let result = Self.withPointers(parameters) { PQexecParams(handle, sql, Int32(parameters.count), nil, $0, nil, nil, 0) }
    guard let result else { throw MirrorError.hubUnreachable(Self.message(PQerrorMessage(handle))) }
    defer { PQclear(result) }
    if let failure = failure(of: result) { throw failure }
    return Self.rows(of: result)
  }

  /// Runs `statements` in one round trip (a libpq pipeline) and returns the rows of each, in order. The
  /// server runs them one after another and, once one fails, skips the rest: the first failure is thrown.
  /// `beforeLast` runs once every statement but the last has been sent (the hub's failpoint before its
  /// `COMMIT`).
  ///
  /// - Throws: `MirrorError.hubUnreachable` when the connection is lost, `MirrorError.hubFailed`
  ///   when a statement fails.
  @discardableResult
  func pipeline(_ statements: [Statement], beforeLast: () -> Void = {}) throws -> [[[String?]]] {
    guard PQenterPipelineMode(handle) == 1 else { throw lostOrFailed() }
    for (index, statement) in statements.enumerated() {
      if index == statements.count - 1 {
        guard PQflush(handle) == 0 else { throw abandon() }
        beforeLast()
      }
      let sent = Self.withPointers(statement.parameters) {
        PQsendQueryParams(handle, statement.sql, Int32(statement.parameters.count), nil, $0, nil, nil, 0)
      }
      guard sent == 1 else { throw abandon() }
    }
    guard PQpipelineSync(handle) == 1 else { throw abandon() }
    var results: [[[String?]]] = []
    var firstFailure: MirrorError?
    for _ in statements {
      var rows: [[String?]] = []
      while let result = PQgetResult(handle) {
        defer { PQclear(result) }
        guard PQresultStatus(result) != PGRES_PIPELINE_ABORTED else { continue }
        if let failure = failure(of: result) {
          firstFailure = firstFailure ?? failure
        } else {
          rows = Self.rows(of: result)
        }
      }
      guard !isBroken else { throw abandon() }
      results.append(rows)
    }
    guard let sync = PQgetResult(handle) else { throw abandon() }
    let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
    PQclear(sync)
    guard synced, PQexitPipelineMode(handle) == 1 else { throw abandon() }
    if let firstFailure { throw firstFailure }
    return results
  }

  /// Gives up on the connection in a pipeline gone wrong (it is broken from now on): the reason, as
  /// `MirrorError.hubUnreachable`.
  private func abandon() -> MirrorError {
    let reason = Self.message(PQerrorMessage(handle))
    isAbandoned = true
    return .hubUnreachable(reason)
  }

  private func lostOrFailed() -> MirrorError {
    let reason = Self.message(PQerrorMessage(handle))
    return isBroken ? .hubUnreachable(reason) : .hubFailed(reason)
  }

  /// The error of a result that did not succeed; `nil` for a success.
  private func failure(of result: OpaquePointer) -> MirrorError? {
    let status = PQresultStatus(result)
    guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK else { return nil }
    let reason = Self.message(PQresultErrorMessage(result))
    return isBroken ? .hubUnreachable(reason) : .hubFailed(reason)
  }

  private static func rows(of result: OpaquePointer) -> [[String?]] {
    var rows: [[String?]] = []
    for row in 0..<PQntuples(result) {
      rows.append(
        (0..<PQnfields(result)).map { column in
          PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
        })
    }
    return rows
  }

  private static func withPointers<R>(_ parameters: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = parameters.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
  }

  /// Ends the transaction in progress, if any, without committing it (nothing to do on a broken
  /// connection: the server rolled it back).
  func rollBack() {
    if !isBroken { _ = try? query("ROLLBACK") }
  }

  /// The payloads of the notifications received since the last call (reads what the socket holds, without
  /// waiting). A lost connection shows as ``isBroken`` afterwards.
  func drainNotifications() -> [String] {
    guard PQconsumeInput(handle) == 1 else { return [] }
    var payloads: [String] = []
    while let notification = PQnotifies(handle) {
      payloads.append(notification.pointee.extra.map { String(cString: $0) } ?? "")
      PQfreemem(notification)
    }
    return payloads
  }

  private static func message(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "unknown libpq error" }
    return String(cString: pointer).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty }.joined(separator: " ")
  }
}
