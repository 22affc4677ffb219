import Foundation

/// A batch insert: rows for one entity, given as dictionaries (attribute name → value) or produced one at a
/// time by a handler, and what the result reports. With a uniqueness constraint on the entity the batch
/// *upserts*: a row whose unique key is stored updates that object's given attributes.
///
/// ```swift
/// let rows: [[String: Value]] = [["name": "Ghibli"], ["name": "A24"]]
/// let result = try store.execute(.insert(BatchInsertDescription(entityName: "Studio", objects: rows, resultType: .objectIDs)))
/// result.objectIDs.count   // 2
/// ```
public struct BatchInsertDescription: Sendable, Hashable {
  /// Where the rows come from.
  public enum Rows: Sendable, Hashable {
    /// Rows given up front.
    case objects([[String: Value]])
    /// Rows produced one at a time (see ``DictionaryHandler``).
    case handler(DictionaryHandler)
  }

  /// A closure filling one row per call into an empty dictionary; it returns `true` to stop, and the
  /// row of that call is not inserted (as in Core Data). Two handlers are equal when they are the same one.
  public struct DictionaryHandler: Sendable, Hashable {
    private let id = UUID()
    /// Fills the row; returns `true` when there are no more rows.
    public let body: @Sendable (inout [String: Value]) -> Bool

    /// A handler that calls `body` once per row.
    public init(_ body: @escaping @Sendable (inout [String: Value]) -> Bool) { self.body = body }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
  }

  /// The entity whose objects the rows become.
  public var entityName: String
  /// The rows: given up front, or produced by a handler.
  public var rows: Rows
  /// What the result reports: only success (the default, as in Core Data), the number of rows written,
  /// or the IDs of the objects written.
  public var resultType: BatchResultType

  /// Inserts `objects`, one dictionary per row.
  public init(entityName: String, objects: [[String: Value]], resultType: BatchResultType = .statusOnly) {
    self.entityName = entityName
    self.rows = .objects(objects)
    self.resultType = resultType
  }

  /// Inserts the rows `dictionaryHandler` produces until it returns `true`.
  ///
  /// ```swift
  /// let counter = Atomic<Int>(0)
  /// let request = BatchInsertDescription(entityName: "Studio") { row in
  ///   let n = counter.add(1, ordering: .relaxed).newValue
  ///   row["name"] = .string("Studio \(n)")
  ///   return n > 100
  /// }
  /// ```
  public init(
    entityName: String, resultType: BatchResultType = .statusOnly,
    dictionaryHandler: @escaping @Sendable (inout [String: Value]) -> Bool
  ) {
    self.entityName = entityName
    self.rows = .handler(DictionaryHandler(dictionaryHandler))
    self.resultType = resultType
  }

  /// The same request with its rows given up front: a handler is called until it stops, once, so that
  /// a store can run the rows more than once (a write retried after growing its file).
  public func materialized() -> BatchInsertDescription {
    guard case .handler = rows else { return self }
    var objects: [[String: Value]] = []
    forEachRow { _, row in objects.append(row) }
    var copy = self
    copy.rows = .objects(objects)
    return copy
  }

  /// Calls `body` with each row in order, with its index, until the rows or the handler end.
  public func forEachRow(_ body: (Int, [String: Value]) throws -> Void) rethrows {
    switch rows {
    case .objects(let objects):
      for (index, row) in objects.enumerated() { try body(index, row) }
    case .handler(let handler):
      var index = 0
      while true {
        var row: [String: Value] = [:]
        if handler.body(&row) { return }
        try body(index, row)
        index += 1
      }
    }
  }
}
