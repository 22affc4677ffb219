import CLibPQ
import Foundation
import StrataMirroring

/// One libpq connection of the hub, text parameters and text results: the hub's few statements need no
/// more (its payloads are JSON). Unchecked `Sendable`: the hub uses it only under its lock.
final class HubConnection: @unchecked Sendable {
  private let handle: OpaquePointer

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

  var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

  /// Runs `sql` with text parameters (`nil` is SQL NULL); returns the rows as text (`nil` for NULL).
  ///
  /// - Throws: `MirrorError.hubUnreachable` when the connection is lost, `MirrorError.hubFailed`
  ///   when the statement fails.
  @discardableResult
  func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
    let copies = parameters.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
    guard let result = PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0) else {
      throw MirrorError.hubUnreachable(Self.message(PQerrorMessage(handle)))
    }
    defer { PQclear(result) }
    let status = PQresultStatus(result)
    guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
      let reason = Self.message(PQresultErrorMessage(result))
      if isBroken { throw MirrorError.hubUnreachable(reason) }
      throw MirrorError.hubFailed(reason)
    }
    var rows: [[String?]] = []
    for row in 0..<PQntuples(result) {
      rows.append(
        (0..<PQnfields(result)).map { column in
          PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
        })
    }
    return rows
  }

  /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
  func transaction<R>(_ body: () throws -> R) throws -> R {
    try query("BEGIN")
    do {
      let result = try body()
      try query("COMMIT")
      return result
    } catch {
      if !isBroken { _ = try? query("ROLLBACK") }
      throw error
    }
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
