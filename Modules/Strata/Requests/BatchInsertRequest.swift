import Foundation
internal import StrataStoreKit

/// A batch insert of objects of `T`, run by the store in one transaction without loading objects into a
/// context — like Core Data's `NSBatchInsertRequest`. Rows come as dictionaries (attribute name → value),
/// from a dictionary handler, or from an object handler that fills in a fresh object of `T`. With a
/// uniqueness constraint on the entity the batch upserts: a row whose unique key is stored updates that
/// object's given attributes (an object handler's row gives every attribute); two rows with one key: the
/// later wins. Relationships cannot be set.
///
/// ```swift
/// var left = 1_000
/// let request = BatchInsertRequest<Fireball>(resultType: .objectIDs) { fireball in
///   guard left > 0 else { return true }
///   fireball.energy = Double(left)
///   left -= 1
///   return false
/// }
/// let result = try context.execute(request)
/// ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [viewContext])
/// ```
public struct BatchInsertRequest<T: ManagedObject> {
  enum Source {
    case rows(BatchInsertDescription.Rows)
    case objectHandler((T) -> Bool)
  }

  let source: Source
  /// What the result reports (`BatchResultType.statusOnly` unless set).
  public var resultType: BatchResultType

  /// Inserts `objects`, one dictionary per row.
  public init(objects: [[String: Value]], resultType: BatchResultType = .statusOnly) {
    source = .rows(.objects(objects))
    self.resultType = resultType
  }

  /// Inserts the rows `dictionaryHandler` fills in, one per call, until it returns `true` (that call's
  /// row is not inserted). The store calls it inside its write transaction.
  public init(
    resultType: BatchResultType = .statusOnly, dictionaryHandler: @escaping @Sendable (inout [String: Value]) -> Bool
  ) {
    source = .rows(.handler(BatchInsertDescription.DictionaryHandler(dictionaryHandler)))
    self.resultType = resultType
  }

  /// Inserts the objects `objectHandler` fills in: each call gets a fresh object of `T` (with its default
  /// values, in no context) and returns `true` to stop (that call's object is not inserted). Every stored
  /// attribute of the object is written; relationships set on it are ignored.
  public init(resultType: BatchResultType = .statusOnly, objectHandler: @escaping (T) -> Bool) {
    source = .objectHandler(objectHandler)
    self.resultType = resultType
  }
}

extension ObjectContext {
  /// Runs a batch insert in the store (see ``BatchInsertRequest``). Merge the result into live contexts
  /// with ``mergeChanges(fromRemoteContextSave:into:)`` (result type `BatchResultType.objectIDs`).
  ///
  /// ```swift
  /// let request = BatchInsertRequest<Studio>(objects: [["name": "Ghibli"]], resultType: .objectIDs)
  /// let result = try context.execute(request)
  /// ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [context])
  /// ```
  ///
  /// - Throws: `.invalidQuery` for a key that is not a stored attribute (unknown, relationship, transient,
  ///   derived), `.validation` for a value an attribute cannot hold or a missing non-optional attribute
  ///   without a default — naming entity, key and row index; the store is then unchanged.
  public func execute<T: ManagedObject>(_ request: BatchInsertRequest<T>) throws -> BatchResult {
    checkQueue()
    let info = entityInfo(for: T.self)
    let entity = info.entity
    switch request.source {
    case .rows(let rows):
      var description = BatchInsertDescription(entityName: entity.name, objects: [], resultType: request.resultType)
      description.rows = rows
      return try execute(.insert(description))
    case .objectHandler(let handler):
      let stored = entity.attributes.indices.filter {
        !entity.attributes[$0].isTransient && entity.attributes[$0].derivation == nil
      }
      var rows: [[String: Value]] = []
      while true {
        let object = info.objectClass.init(
          .managed(info, self, info.temporaryID.nextTemporary(), isInserted: true))
        object.managedObjectContext = nil
        guard let typed = object as? T else {
          throw StoreError(.misuse, "\(T.self) is registered for entity \(entity.name) of another class", entity: entity.name)
        }
        if handler(typed) { break }
        var row: [String: Value] = [:]
        row.reserveCapacity(stored.count)
        for position in stored { row[entity.attributes[position].name] = object.values[position] }
        rows.append(row)
      }
      return try execute(.insert(BatchInsertDescription(entityName: entity.name, objects: rows, resultType: request.resultType)))
    }
  }
}

extension BatchResult {
  /// The result of `request` as a save notification (see ``changes(of:)-(BatchRequest)``).
  public func changes<T: ManagedObject>(of request: BatchInsertRequest<T>) -> ContextDidSave {
    changes(of: .insert(entityName: T.entityName, objects: []))
  }
}
