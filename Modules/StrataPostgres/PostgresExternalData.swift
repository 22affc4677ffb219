import Foundation
import StrataStoreKit

/// The values a PostgreSQL store keeps out of its rows (attributes that allow external storage): the
/// table `_strata_external_data` of the store's schema, one row per value (its UUID name, its bytes, when
/// it was written), made by the first write. A write commits before the save that names its values does,
/// and the values a save replaced are deleted after it commits, as a file store does with its files.
struct PostgresExternalData: ExternalDataStorage {
  let store: PostgresStore
  static let table = "_strata_external_data"

  func serving(_ store: any PersistentStore) -> any ExternalDataStorage {
    (store as? PostgresStore).map { PostgresExternalData(store: $0) } ?? self
  }

  private var table: String { store.schema.qualify(Self.table) }

  private func withConnection<R: Sendable>(_ body: (PostgresConnection) throws -> R) throws -> R {
    do {
      return try store.pool.withConnection(body)
    } catch let error as PostgresError {
      throw error.storeError(location: store.location)
    }
  }

  private func tableExists(_ connection: PostgresConnection) throws -> Bool {
    let rows = try connection.query(
      "SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2",
      [.string(store.schema.name), .string(Self.table)])
    return rows.count > 0
  }

  func write(_ values: [(name: UUID, bytes: Data)]) throws {
    guard !values.isEmpty else { return }
    try withConnection { connection in
      try connection.execute(
        "CREATE TABLE IF NOT EXISTS \(table) (name uuid PRIMARY KEY, bytes bytea NOT NULL, "
          + "written timestamptz NOT NULL DEFAULT now())")
      try connection.execute("BEGIN")
      do {
        for (name, bytes) in values {
          try connection.run(
            "INSERT INTO \(table) (name, bytes) VALUES ($1::uuid, $2)",
            [.string(name.uuidString), .binary(Array(bytes), oid: PGType.bytea)])
        }
        try connection.execute("COMMIT")
      } catch {
        try? connection.execute("ROLLBACK")
        throw error
      }
    }
  }

  func read(_ name: UUID) throws -> Data? {
    try withConnection { connection -> Data? in
      guard try tableExists(connection) else { return nil }
      let rows = try connection.query("SELECT bytes FROM \(table) WHERE name = $1::uuid", [.string(name.uuidString)])
      return rows.count > 0 ? rows.data(0, 0) : nil
    }
  }

  func remove(_ names: [UUID]) throws {
    guard !names.isEmpty else { return }
    try withConnection { connection in
      guard try tableExists(connection) else { return }
      try connection.run(
        "DELETE FROM \(table) WHERE name = ANY($1::uuid[])",
        [.string("{" + names.map(\.uuidString).joined(separator: ",") + "}")])
    }
  }

  func names() throws -> [UUID: Date] {
    try withConnection { connection -> [UUID: Date] in
      guard try tableExists(connection) else { return [:] }
      // The age comes from the server's clock, which every machine writing the store shares.
      let rows = try connection.query(
        "SELECT name::text, extract(epoch FROM now() - written)::float8 FROM \(table)")
      let now = Date()
      var names: [UUID: Date] = [:]
      for row in 0..<rows.count {
        guard let name = UUID(uuidString: rows.text(row, 0)) else { continue }
        names[name] = now.addingTimeInterval(-rows.double(row, 1))
      }
      return names
    }
  }
}
