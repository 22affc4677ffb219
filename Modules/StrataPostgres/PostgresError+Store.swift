import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresError {
  /// How to start a server for the tests, named in the "server down" message.
  static let startHint =
    "is the server running? start one with `scripts/postgres-server start DIR` (or `pg_ctl start`) and pass its URI"

  /// The ``StoreError`` a failed connection attempt means: one line naming the cause.
  func connectionError(location: String) -> StoreError {
    let text = message
    if text.contains("does not exist") && text.contains("database") {
      return StoreError(.notFound, "cannot connect to \(location): \(text)")
    }
    if text.contains("authentication failed") || text.contains("role") && text.contains("does not exist")
      || text.contains("no password supplied") || text.contains("pg_hba.conf")
    {
      return StoreError(.io, "cannot connect to \(location): authentication failed (\(text))")
    }
    if text.contains("No such file or directory") || text.contains("Connection refused")
      || text.contains("could not connect") || text.contains("could not translate host name")
      || text.contains("timeout expired")
    {
      return StoreError(.io, "cannot connect to \(location): no PostgreSQL server answers there; \(Self.startHint)")
    }
    return StoreError(.io, "cannot connect to \(location): \(text)")
  }

  /// The ``StoreError`` this failure means, with `location` named in I/O messages.
  func storeError(location: String, entity: String? = nil) -> StoreError {
    if connectionLost {
      return StoreError(.io, "the connection to \(location) was lost: \(message)", entity: entity)
    }
    switch sqlState ?? "" {
    case "23505":
      return StoreError(.constraintConflict, "uniqueness constraint violated in \(location): \(message)", entity: entity)
    case "23502":
      return StoreError(.validation, "a required value is nil: \(message)", entity: entity)
    case "23503":
      return StoreError(.validation, "a reference points at an object that is not stored: \(message)", entity: entity)
    case "2201B":
      return StoreError(.invalidQuery, "MATCHES pattern is not a valid regular expression: \(message)", entity: entity)
    case "22003":
      return StoreError(.validation, "a value is out of range: \(message)", entity: entity)
    case "25006":
      return StoreError(.readOnly, "\(location) cannot be written: \(message)", entity: entity)
    case "57014":
      return StoreError(.cancelled, "the statement on \(location) was cancelled or timed out: \(message)", entity: entity)
    case "42P01", "42703":
      return StoreError(.corrupted, "the store at \(location) lacks a table or column it needs: \(message)", entity: entity)
    default:
      return StoreError(.io, "PostgreSQL error on \(location): \(description)", entity: entity)
    }
  }
}
