import Foundation

// MARK: Dictionary results

extension SQLQueryCompiler {
  /// How one selected SQL value becomes a row value.
  package enum ColumnDecoding: Sendable {
    /// A stored attribute of this type (also the folds that keep their element's type).
    case attribute(AttributeType)
    /// A to-one target's primary key, an object ID of this entity.
    case objectID(entity: String)
    /// A computed value (converted to the declared result type like every fold and expression).
    case computed
  }

  /// A dictionary fetch compiled to `SELECT <columns> FROM … WHERE … [GROUP BY …] ORDER BY …`.
  package struct DictionaryQuery {
    package var query: Query
    /// Each column's key, SQL, how to read it, and for a fold or expression the declared result type.
    package var columns: [(name: String, sql: Fragment, decoding: ColumnDecoding, resultType: AttributeType?)]
    package var groupBy: [Fragment]
  }

  /// Compiles a checked ``DictionaryFetch`` with the request's predicate and sort descriptors. Folds
  /// become the dialect's aggregates (``SQLDialect/groupFold(_:_:isFloating:)``); a grouped fetch without
  /// sort descriptors orders by its group-by values, as ``DictionaryFetch`` does in memory.
  ///
  /// - Throws: what the validator throws (`.invalidQuery`, `.unsupported`).
  package static func compileDictionary(
    _ request: FetchDescription, _ plan: DictionaryFetch, schema: Schema, storeIdentifier: String
  ) throws -> DictionaryQuery {
    let table = try schema.table(request.entityName)
    var compiler = Self(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    var base = try compiler.compileQuery(request, table)
    var columns: [(name: String, sql: Fragment, decoding: ColumnDecoding, resultType: AttributeType?)] = []
    for column in plan.columns {
      switch column {
      case .property(let name, let path):
        let (sql, decoding) = try compiler.single(path)
        columns.append((name, sql, decoding, nil))
      case .fold(let name, let function, let path, let resultType):
        let (x, elementDecoding) = try compiler.single(path)
        var isFloating = false
        if case .attribute(let type) = elementDecoding { isFloating = type == .double || type == .float }
        let keepsType = function == .min || function == .max || function == .mode
        columns.append(
          (name, Dialect.groupFold(function, x, isFloating: isFloating), keepsType ? elementDecoding : .computed, resultType))
      case .expression(let name, let expression, let resultType):
        let operand = try compiler.expression(expression)
        columns.append((name, operand.fragment, .computed, resultType))
      }
    }
    var groupBy: [Fragment] = []
    for path in plan.groupBy { groupBy.append(try compiler.single(path).0) }
    var orderBy = Array(base.orderBy.dropLast())
    if plan.isGrouped {
      if request.sortDescriptors.isEmpty { orderBy = groupBy.map { Dialect.groupOrderTerm($0.sql) } }
    } else {
      orderBy.append("t0.\"_pk\" ASC")
    }
    base.joins = compiler.scopes[0].joins
    base.orderBy = orderBy
    return DictionaryQuery(query: base, columns: columns, groupBy: groupBy)
  }

  /// The SQL of a single-valued key path and how to read it back.
  private mutating func single(_ path: ResolvedKeyPath) throws -> (Fragment, ColumnDecoding) {
    let alias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
    let operand = try terminal(
      path.terminal, of: path.terminalEntity, alias: alias, throughToOne: !path.hops.isEmpty, elementHops: path.elementHops)
    switch path.valueKind {
    case .attribute(let type): return (operand.fragment, .attribute(type))
    case .objectID(let entity): return (operand.fragment, .objectID(entity: entity))
    case .count: return (operand.fragment, .computed)
    }
  }

  /// The SQL of a checked expression of `root`'s own attributes, reading the row aliased `t0`.
  ///
  /// - Throws: `.unsupported` when the expression reads another object.
  package static func compileValue(
    _ expression: QueryExpression, schema: Schema, storeIdentifier: String, root: EntityDescription
  ) throws -> Fragment {
    var compiler = Self(schema: schema, storeIdentifier: storeIdentifier, root: root)
    let operand = try compiler.expression(expression)
    guard compiler.scopes[0].joins.isEmpty else {
      throw StoreError(.unsupported, "the expression reads another object", entity: root.name)
    }
    return operand.fragment
  }
}
