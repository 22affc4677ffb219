import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Runs `body` in one transaction on `connection`, retrying it from the start (up to
  /// ``PostgresStoreConfiguration/retryLimit`` times) when the server reports a serialization failure
  /// (40001) or a deadlock (40P01); then the error is reported.
  func writeTransaction<R: Sendable>(
    _ connection: PostgresConnection, deferringConstraints: Bool, _ body: (PostgresConnection) throws -> R
  ) throws -> R {
    var attempt = 0
    while true {
      do {
        return try committing(connection, deferringConstraints: deferringConstraints, body)
      } catch let error as PostgresError where error.isSerializationFailure {
        guard attempt < configuration.retryLimit else {
          throw StoreError(
            .io,
            "the save on \(location) failed \(attempt + 1) times with a \(error.sqlState == "40P01" ? "deadlock" : "serialization failure") "
              + "(\(error.description)); nothing was committed, try again")
        }
        attempt += 1
      }
    }
  }

  /// `BEGIN` (noting the transaction's ID, and deferring constraints when asked, in one round trip), `body`,
  /// `COMMIT`. A connection lost before `COMMIT` was sent
  /// means the server rolled the transaction back; one lost while committing is asked about on a new
  /// connection (`txid_status`), so the `.io` error says whether the save was committed — never half.
  private func committing<R: Sendable>(
    _ connection: PostgresConnection, deferringConstraints: Bool, _ body: (PostgresConnection) throws -> R
  ) throws -> R {
    // A connection found lost here has done nothing yet: the pool reconnects and runs the write again.
    let transaction = try connection.textQuery(
      deferringConstraints ? "BEGIN; SET CONSTRAINTS ALL DEFERRED; SELECT txid_current()" : "BEGIN; SELECT txid_current()")
    let result: R
    do {
      result = try body(connection)
      try injectFaults(connection)
    } catch {
      guard connection.isOpen else {
        throw StoreError(
          .io,
          "the connection to \(location) was lost during a save, which was not committed (the server rolled it back): \(error)")
      }
      try? connection.execute("ROLLBACK")
      throw error
    }
    do {
      try connection.execute("COMMIT")
      if faults.withLock({ faults in
        defer { faults.loseCommitReply = false }
        return faults.loseCommitReply
      }) {
        connection.close()
        throw PostgresError(message: "server closed the connection unexpectedly (test)", connectionLost: true)
      }
    } catch let error as PostgresError where error.connectionLost {
      throw commitOutcome(of: transaction, error)
    }
    return result
  }

  private func injectFaults(_ connection: PostgresConnection) throws {
    let (statement, terminate) = faults.withLock { faults -> (String?, Bool) in
      defer { faults.terminateBeforeCommit = false }
      return (faults.beforeCommit.isEmpty ? nil : faults.beforeCommit.removeFirst(), faults.terminateBeforeCommit)
    }
    if let statement { try connection.execute(statement) }
    if terminate {
      let pid = try connection.textQuery("SELECT pg_backend_pid()")
      let other = try pool.target.connect(configuration: configuration)
      defer { other.close() }
      try other.execute("SELECT pg_terminate_backend(\(pid))")
    }
  }

  /// The error of a save whose connection was lost while committing, after asking the server on a new
  /// connection whether transaction `id` committed (waiting while the server still shows it running).
  private func commitOutcome(of id: String, _ error: PostgresError) -> StoreError {
    let lost = "the connection to \(location) was lost while committing a save (\(error.message))"
    guard let xid = Int64(id) else { return StoreError(.io, "\(lost); whether it was committed could not be checked") }
    var status: String?
    for _ in 0..<500 {
      guard
        let answer = try? {
          let checker = try pool.target.connect(configuration: configuration)
          defer { checker.close() }
          return try checker.textQuery("SELECT coalesce(txid_status(\(xid)), 'unknown')")
        }()
      else { break }
      status = answer
      if answer != "in progress" { break }
      usleep(10_000)
    }
    switch status {
    case "committed": return StoreError(.io, "\(lost); the save was committed (transaction \(xid))")
    case "aborted": return StoreError(.io, "\(lost); the save was not committed (transaction \(xid) rolled back)")
    default:
      return StoreError(
        .io, "\(lost); whether transaction \(xid) committed could not be checked (the server did not answer)")
    }
  }
}
