import Foundation

/// A dictionary-result fetch (`FetchResultType.dictionaries`), checked against the model: what each
/// row holds, how rows group, which groups stay. Every backend follows it; stores without SQL compute
/// the rows with ``rows(from:source:)``, the SQLite store compiles the same plan to `GROUP BY`.
///
/// The rules (docs/QUERY-SEMANTICS.md, "Dictionary results"):
/// - `propertiesToFetch` names attributes or key paths through to-one relationships (the key is the key
///   path as written), or named expressions. `nil` fetches every stored attribute.
/// - An expression `f:(keyPath)` with a `CollectionFunction` `f` and a single-valued key path folds
///   that key path over the rows (of each group): `sum:(specialCount)`, `count:(name)`, `average:(price)`.
///   Any other expression is computed per row (`specialCount + 1`).
/// - With a fold or `propertiesToGroupBy`, the result has one row per group (one row in all when there is
///   no grouping, even over no rows); fetched key paths must then be grouped, per-row expressions are
///   not allowed, and sort keys must be grouped. Groups come ordered by the sort descriptors, else by
///   their group-by values ascending (nil first).
/// - `havingPredicate` keeps groups whose row matches; its key paths are the row's keys (a property key
///   path or an expression's name).
/// - `returnsDistinctResults` drops repeated rows, keeping each at its first place.
/// - Nil values are left out of a row, as Core Data does. Limit and offset apply to the final rows.
/// - Values have the attribute's type; an expression's value is converted to its declared result type.
///
/// ```swift
/// var request = FetchDescription(entityName: "Venue", resultType: .dictionaries)
/// request.propertiesToFetch = [
///   .keyPath("priceInfo.priceCategory"),
///   .expression(name: "deals", expression: try QueryExpression(format: "sum:(specialCount)"), resultType: .int64),
/// ]
/// request.propertiesToGroupBy = ["priceInfo.priceCategory"]
/// // [["priceInfo.priceCategory": "$", "deals": 12], …]
/// ```
public struct DictionaryFetch: Sendable {
  /// One key of every row.
  public enum Column: Sendable {
    /// A single-valued key path; in a grouped fetch, one of the group-by key paths.
    case property(name: String, path: ResolvedKeyPath)
    /// A fold of a single-valued key path over the rows of a group.
    case fold(name: String, function: CollectionFunction, path: ResolvedKeyPath, resultType: AttributeType)
    /// A checked expression computed per row (ungrouped fetches only).
    case expression(name: String, expression: QueryExpression, resultType: AttributeType)

    /// The key of the column in each row.
    public var name: String {
      switch self {
      case .property(let name, _), .fold(let name, _, _, _), .expression(let name, _, _): name
      }
    }
  }

  /// The entity fetched.
  public let entity: EntityDescription
  /// The store's model.
  public let model: ObjectModel
  /// The keys of every row, in the request's order.
  public let columns: [Column]
  /// The group-by key paths, resolved.
  public let groupBy: [ResolvedKeyPath]
  /// Whether rows are groups (there is a fold or a group-by).
  public let isGrouped: Bool
  /// The request's `havingPredicate`, over a group's columns.
  public let having: QueryPredicate?
  /// Whether duplicate rows are dropped (`returnsDistinctResults`).
  public let isDistinct: Bool
  /// Whether the request has sort descriptors (grouped rows are otherwise ordered by their group-by values).
  public let isSorted: Bool

  /// Checks the dictionary parts of `request` against `model`.
  /// - Throws: `StoreError` `.invalidQuery` naming the key at fault: an unknown or to-many key path, an
  ///   ungrouped property or sort key beside folds, a having predicate reading a key the rows do not have.
  public init(_ request: FetchDescription, model: ObjectModel) throws {
    let entity = try model.requireEntity(request.entityName)
    self.entity = entity
    self.model = model
    self.isSorted = !request.sortDescriptors.isEmpty
    var columns: [Column] = []
    let selections =
      request.propertiesToFetch
      ?? entity.attributes.filter { !$0.isTransient }.map { PropertySelection.keyPath($0.name) }
    for selection in selections {
      columns.append(try Self.column(selection, entity: entity, model: model))
    }
    let groupBy = try (request.propertiesToGroupBy ?? []).map { try Self.singleValued($0, entity: entity, model: model) }
    let hasFold = columns.contains { if case .fold = $0 { true } else { false } }
    isGrouped = hasFold || !groupBy.isEmpty
    let grouped = Set(groupBy.map(\.keyPath))
    if isGrouped {
      for column in columns {
        switch column {
        case .property(let name, let path) where !grouped.contains(path.keyPath):
          throw StoreError(
            .invalidQuery,
            "'\(name)' is fetched beside aggregates but is not in propertiesToGroupBy (fetch of \(entity.name))",
            entity: entity.name, key: name)
        case .expression(let name, _, _):
          throw StoreError(
            .invalidQuery,
            "the expression '\(name)' is computed per object and cannot be fetched beside aggregates or groups (fetch of \(entity.name))",
            entity: entity.name, key: name)
        default: break
        }
      }
      for sort in request.sortDescriptors where !grouped.contains(sort.keyPath) {
        throw StoreError(
          .invalidQuery, "a grouped fetch of \(entity.name) can only sort by grouped key paths, not '\(sort.keyPath)'",
          entity: entity.name, key: sort.keyPath)
      }
    }
    if let having = request.havingPredicate {
      guard isGrouped else {
        throw StoreError(
          .invalidQuery, "havingPredicate needs propertiesToGroupBy (fetch of \(entity.name))", entity: entity.name)
      }
      let names = Set(columns.map(\.name))
      for key in having.keyPaths where !names.contains(key) {
        throw StoreError(
          .invalidQuery,
          "havingPredicate reads '\(key)', which is not fetched; use a fetched key path or expression name (fetch of \(entity.name))",
          entity: entity.name, key: key)
      }
    }
    self.columns = columns
    self.groupBy = groupBy
    self.having = request.havingPredicate
    self.isDistinct = request.returnsDistinctResults
  }

  private static func singleValued(
    _ keyPath: String, entity: EntityDescription, model: ObjectModel
  ) throws
    -> ResolvedKeyPath
  {
    let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
    guard !path.isCollection else {
      throw StoreError(
        .invalidQuery, "'\(keyPath)' of \(entity.name) is a collection; dictionary results fetch single values",
        entity: entity.name, key: keyPath)
    }
    guard path.members.isEmpty && path.memberFold == nil else {
      throw StoreError(
        .unsupported,
        "'\(keyPath)' of \(entity.name) reads inside a Codable attribute; dictionary results read a Codable attribute whole",
        entity: entity.name, key: keyPath)
    }
    return path
  }

  private static func column(
    _ selection: PropertySelection, entity: EntityDescription, model: ObjectModel
  ) throws
    -> Column
  {
    switch selection {
    case .keyPath(let keyPath):
      return .property(name: keyPath, path: try singleValued(keyPath, entity: entity, model: model))
    case .expression(let name, let expression, let resultType):
      if case .function(let functionName, let arguments) = expression,
        let function = CollectionFunction(rawValue: functionName), arguments.count == 1,
        case .keyPath(let keyPath) = arguments[0],
        let path = try? ResolvedKeyPath(keyPath, entity: entity, model: model), !path.isCollection
      {
        if function.needsNumbers || function == .min || function == .max || function == .mode {
          try requireFoldable(function, path, entity: entity)
        }
        return .fold(name: name, function: function, path: path, resultType: resultType)
      }
      let (checked, _) = try QueryValidator.checkExpression(expression, entity: entity, model: model)
      return .expression(name: name, expression: checked, resultType: resultType)
    }
  }

  private static func requireFoldable(
    _ function: CollectionFunction, _ path: ResolvedKeyPath, entity: EntityDescription
  )
    throws
  {
    guard case .attribute(let type) = path.valueKind else {
      if function == .count { return }
      throw StoreError(
        .invalidQuery, "\(function.rawValue) needs an attribute, but '\(path.keyPath)' of \(entity.name) is a relationship",
        entity: entity.name, key: path.keyPath)
    }
    if type == .decimal {
      throw StoreError(
        .unsupported, "\(function.rawValue) of the decimal '\(path.keyPath)' is not supported in fetches",
        entity: entity.name, key: path.keyPath)
    }
    let suits = type.isNumeric || type == .bool || (!function.needsNumbers && (type == .string || type == .date))
    guard suits else {
      throw StoreError(
        .invalidQuery, "\(function.rawValue) does not apply to '\(path.keyPath)' of \(entity.name), a \(type.rawValue)",
        entity: entity.name, key: path.keyPath)
    }
  }

  // MARK: Computing rows

  /// The rows of the fetch from the matching snapshots, already filtered and sorted (before offset
  /// and limit, which the caller applies with ``page(_:offset:limit:)``).
  public func rows(from snapshots: [Snapshot], source: some EvaluationSource) throws -> [[String: Value]] {
    var rows: [[String: Value]] = []
    if isGrouped {
      var groups: [[Value]: Int] = [:]
      var members: [[Snapshot]] = []
      var keys: [[Value]] = []
      for snapshot in snapshots {
        var key: [Value] = []
        for path in groupBy { key.append(try KeyPathReader.value(of: path, from: snapshot, source)) }
        if let index = groups[key] {
          members[index].append(snapshot)
        } else {
          groups[key] = members.count
          members.append([snapshot])
          keys.append(key)
        }
      }
      if !groupBy.isEmpty && snapshots.isEmpty { return [] }
      if members.isEmpty { members = [[]] }
      for group in members {
        var row: [String: Value] = [:]
        for column in columns {
          let value: Value
          switch column {
          case .property(_, let path):
            value = try group.first.map { try KeyPathReader.value(of: path, from: $0, source) } ?? .null
          case .fold(_, let function, let path, let resultType):
            var values: [Value] = []
            for snapshot in group { values.append(try KeyPathReader.value(of: path, from: snapshot, source)) }
            value = Self.converted(function.fold(values), to: resultType)
          case .expression:
            value = .null
          }
          if !value.isNull { row[column.name] = value }
        }
        if let having, !(try Self.matches(row, having)) { continue }
        rows.append(row)
      }
      return isSorted ? rows : orderedGroups(rows)
    }
    let computed = try columns.map { column -> ComputedExpression? in
      guard case .expression(_, let expression, _) = column else { return nil }
      return try ComputedExpression(expression, entity: entity, model: model)
    }
    for snapshot in snapshots {
      var row: [String: Value] = [:]
      for (index, column) in columns.enumerated() {
        let value: Value
        switch column {
        case .property(_, let path): value = try KeyPathReader.value(of: path, from: snapshot, source)
        case .expression(_, _, let resultType):
          value = Self.converted(try computed[index]?.value(snapshot, source) ?? .null, to: resultType)
        case .fold: value = .null
        }
        if !value.isNull { row[column.name] = value }
      }
      rows.append(row)
    }
    return isDistinct ? Self.distinct(rows) : rows
  }

  /// Grouped rows ordered by their group-by values, ascending and nil first.
  func orderedGroups(_ rows: [[String: Value]]) -> [[String: Value]] {
    guard isGrouped, !groupBy.isEmpty else { return rows }
    return rows.enumerated().sorted { a, b in
      for path in groupBy {
        let x = a.element[path.keyPath] ?? .null
        let y = b.element[path.keyPath] ?? .null
        if x.isNull != y.isNull { return x.isNull }
        if let order = ValueComparison.compare(x, y), order != 0 { return order < 0 }
      }
      return a.offset < b.offset
    }.map(\.element)
  }

  /// `rows` without repeats, each kept at its first place.
  public static func distinct(_ rows: [[String: Value]]) -> [[String: Value]] {
    var seen: Set<[String: Value]> = []
    return rows.filter { seen.insert($0).inserted }
  }

  /// The rows after `offset` and within `limit` (`nil` for no limit).
  public static func page(_ rows: [[String: Value]], offset: Int, limit: Int?) -> [[String: Value]] {
    let start = min(max(offset, 0), rows.count)
    let end = limit.map { min(rows.count, start + $0) } ?? rows.count
    return Array(rows[start..<end])
  }

  /// Whether a row matches a having predicate whose key paths are the row's keys.
  public static func matches(_ row: [String: Value], _ predicate: QueryPredicate) throws -> Bool {
    switch predicate {
    case .constant(let value): return value
    case .and(let parts):
      for part in parts where !(try matches(row, part)) { return false }
      return true
    case .or(let parts):
      for part in parts where try matches(row, part) { return true }
      return false
    case .not(let inner): return !(try matches(row, inner))
    case .comparison(let c):
      func value(_ expression: QueryExpression) throws -> Value {
        switch expression {
        case .constant(let v): return v
        case .keyPath(let key): return row[key] ?? .null
        default:
          throw StoreError(.unsupported, "havingPredicate compares fetched keys and constants only, not \(expression)")
        }
      }
      return try ValueComparison.holds(try value(c.left), c.op, try value(c.right), c.options)
    }
  }

  /// `value` in the representation of `type` (numbers converted; anything else as it is).
  public static func converted(_ value: Value, to type: AttributeType) -> Value {
    switch (type, value) {
    case (.int16, .double(let d)), (.int32, .double(let d)), (.int64, .double(let d)):
      // A double beyond Int64's range stays a double, which the caller then refuses.
      return Int64(exactly: d.rounded(.towardZero)).map(Value.int) ?? value
    case (.double, .int(let i)), (.float, .int(let i)): return .double(Double(i))
    case (.bool, .int(let i)): return .bool(i != 0)
    default: return type.coerce(value) ?? value
    }
  }
}
