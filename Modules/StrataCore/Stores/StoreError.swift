import Foundation

/// The one error type every store and the object graph throw.
///
/// Each error has a stable ``Code`` plus the entity, key and value involved, so that a message tells the
/// user what to fix and code can match on the kind:
///
/// ```swift
/// do { try context.save() }
/// catch let error as StoreError where error.code == .constraintConflict { … }   // match a code
/// catch let error as StoreError { print(error.message) }
/// ```
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
  /// The classification of an error. Backends map their native errors into these.
  public enum Code: String, Sendable, Hashable, Codable {
    /// A uniqueness constraint would be violated. `conflicts` lists each clash.
    case constraintConflict
    /// An object changed in the store since the context read it (optimistic locking).
    case optimisticLockConflict
    /// A value breaks a rule of the model (required, range, pattern, count).
    case validation
    /// A delete rule (deny) forbids deleting an object.
    case deleteDenied
    /// An object, entity, key or file does not exist.
    case notFound
    /// The model stored in the file is not the model the app opened it with.
    case schemaMismatch
    /// The file or directory is not a readable Strata store.
    case corrupted
    /// The operating system refused a read or a write.
    case io
    /// The request is valid but this store cannot execute it.
    case unsupported
    /// The request names an unknown entity or key, mixes incompatible types, or does not parse.
    case invalidQuery
    /// The model itself is inconsistent (for example an inverse that does not point back).
    case invalidModel
    /// A write was attempted on a store opened read-only.
    case readOnly
    /// A history token is older than the history the store retains (deleted with `deleteHistory(before:)`,
    /// or dropped when the store was opened without history), or belongs to another store. Fetch
    /// everything again, then continue from the store's `currentHistoryToken()`.
    case historyExpired
    /// No store type of that name is registered.
    case unknownStoreType
    /// The operation was cancelled.
    case cancelled
    /// A store or context was used after it was closed, or in the wrong state.
    case misuse
  }

  /// One side-by-side clash reported by a constraint or optimistic-lock conflict.
  public struct Conflict: Sendable, Hashable, CustomStringConvertible {
    /// The object whose save failed.
    public var objectID: ObjectID?
    /// The object already in the store that it clashes with, when known.
    public var conflictingObjectID: ObjectID?
    /// The entity involved.
    public var entity: String
    /// The keys involved (the uniqueness constraint's attributes, or the changed keys).
    public var keys: [String]
    /// The values the saving object carries for `keys`.
    public var values: [Value]
    /// The values stored for `keys`, when known.
    public var storedValues: [Value]

    /// A clash of `objectID` with `conflictingObjectID` over `keys` of `entity`.
    public init(
      objectID: ObjectID?, conflictingObjectID: ObjectID? = nil, entity: String, keys: [String],
      values: [Value] = [], storedValues: [Value] = []
    ) {
      self.objectID = objectID
      self.conflictingObjectID = conflictingObjectID
      self.entity = entity
      self.keys = keys
      self.values = values
      self.storedValues = storedValues
    }

    public var description: String {
      var s = "\(entity).\(keys.joined(separator: "+"))"
      if !values.isEmpty { s += " = \(values.map(\.description).joined(separator: ", "))" }
      if let other = conflictingObjectID { s += " (clashes with \(other))" }
      return s
    }
  }

  /// The kind of error, stable across releases: match on it (`catch StoreError.Code.validation`).
  public var code: Code
  /// A one-line, human-readable explanation.
  public var message: String
  /// The entity involved, when there is one.
  public var entity: String?
  /// The attribute or relationship involved, when there is one.
  public var key: String?
  /// The offending value, when there is one.
  public var value: Value?
  /// Every clash, for constraint and optimistic-lock conflicts; every failure, for validation.
  public var conflicts: [Conflict]

  /// An error of kind `code` with a one-line `message` and what it involves.
  public init(
    _ code: Code, _ message: String, entity: String? = nil, key: String? = nil, value: Value? = nil,
    conflicts: [Conflict] = []
  ) {
    self.code = code
    self.message = message
    self.entity = entity
    self.key = key
    self.value = value
    self.conflicts = conflicts
  }

  public var description: String { message }
  public var errorDescription: String? { message }
}

extension StoreError.Code {
  /// Whether `error` is a ``StoreError`` with this code: `StoreError.Code.validation ~= error`. (A clause
  /// `catch StoreError.Code.validation` does not reach it — Swift reads that as an enum-case pattern; write
  /// `catch let error as StoreError where error.code == .validation`.)
  public static func ~= (code: StoreError.Code, error: any Error) -> Bool {
    (error as? StoreError)?.code == code
  }
}

extension StoreError {
  /// The `.constraintConflict` error for uniqueness clashes, listing every one in its message and in
  /// ``conflicts``; `nil` when there are none.
  ///
  /// ```swift
  /// if let error = StoreError.uniquenessViolation(conflicts) { throw error }
  /// ```
  public static func uniquenessViolation(_ conflicts: [Conflict]) -> StoreError? {
    guard let first = conflicts.first else { return nil }
    let details = conflicts.map { conflict in
      let values = zip(conflict.keys, conflict.values).map { "\($0) = \($1)" }.joined(separator: ", ")
      let other = conflict.conflictingObjectID.map { " (already used by \($0))" } ?? ""
      return "\(conflict.entity) \(values)\(other)"
    }
    let single = conflicts.count == 1
    return StoreError(
      .constraintConflict, "uniqueness constraint violated: " + details.joined(separator: "; "),
      entity: Set(conflicts.map(\.entity)).count == 1 ? first.entity : nil,
      key: single ? first.keys.joined(separator: ",") : nil,
      value: single && first.values.count == 1 ? first.values.first : nil, conflicts: conflicts)
  }
}
