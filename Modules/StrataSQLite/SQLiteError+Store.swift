import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteError {
  // The extended codes are C macros built with `|`, which Swift does not import.
  static let constraintUnique: Int32 = 2067  // SQLITE_CONSTRAINT_UNIQUE
  static let constraintPrimaryKey: Int32 = 1555  // SQLITE_CONSTRAINT_PRIMARYKEY
  static let constraintNotNull: Int32 = 1299  // SQLITE_CONSTRAINT_NOTNULL
  static let constraintCheck: Int32 = 275  // SQLITE_CONSTRAINT_CHECK

  /// Whether the error is a `UNIQUE` (or primary key) constraint failure.
  var isUniqueViolation: Bool {
    extendedCode == Self.constraintUnique || extendedCode == Self.constraintPrimaryKey
  }

  /// Whether the error is a `NOT NULL` constraint failure.
  var isNotNullViolation: Bool { extendedCode == Self.constraintNotNull }

  /// The `Table.column` SQLite names in a constraint message ("NOT NULL constraint failed: Movie.title").
  var constraintColumn: (table: String, column: String)? {
    guard let colon = message.range(of: "failed: ") else { return nil }
    let first = message[colon.upperBound...].split(separator: ",").first.map(String.init) ?? ""
    let parts = first.trimmingCharacters(in: .whitespaces).split(separator: ".", maxSplits: 1).map(String.init)
    return parts.count == 2 ? (parts[0], parts[1]) : nil
  }

  /// The ``StoreError`` this SQLite failure means, with `path` named in I/O and corruption messages.
  /// Whether the failure is a full disk: SQLite's `SQLITE_FULL`, or an I/O error whose system error
  /// is `ENOSPC` (a WAL index or journal that could not grow).
  var isDiskFull: Bool { primaryCode == SQLITE_FULL || systemErrno == ENOSPC }

  func storeError(path: String, entity: String? = nil) -> StoreError {
    if isDiskFull {
      return StoreError(
        .io, "the disk holding \(path) is full (no space left on the device); nothing was written", entity: entity)
    }
    switch primaryCode {
    case SQLITE_BUSY, SQLITE_LOCKED:
      return StoreError(.io, "\(path) is locked by another connection or process: \(message)", entity: entity)
    case SQLITE_READONLY:
      return StoreError(.readOnly, "\(path) cannot be written: \(message)", entity: entity)
    case SQLITE_NOTADB, SQLITE_CORRUPT:
      return StoreError(.corrupted, "\(path) is not a readable SQLite database: \(message)", entity: entity)
    case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
      return StoreError(.io, "\(path) cannot be opened: \(message)", entity: entity)
    case SQLITE_IOERR, SQLITE_FULL, SQLITE_NOLFS, SQLITE_PROTOCOL:
      return StoreError(.io, "I/O error on \(path): \(message)", entity: entity)
    case SQLITE_CONSTRAINT:
      if isNotNullViolation, let (table, column) = constraintColumn {
        return StoreError(
          .validation, "\(table).\(column) is required but the value is nil", entity: table, key: column, value: .null)
      }
      return StoreError(.constraintConflict, "constraint failed in \(path): \(message)", entity: entity)
    case SQLITE_INTERRUPT:
      return StoreError(.cancelled, "the operation on \(path) was interrupted", entity: entity)
    case SQLITE_MISUSE:
      return StoreError(.misuse, "SQLite misuse on \(path): \(message)", entity: entity)
    case SQLITE_ERROR where sql != nil && message.hasPrefix("MATCHES pattern"):
      return StoreError(.invalidQuery, message, entity: entity)
    default:
      return StoreError(.io, "SQLite error on \(path): \(description)", entity: entity)
    }
  }
}
