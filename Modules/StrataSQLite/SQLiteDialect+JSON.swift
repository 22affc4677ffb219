import Foundation
import StrataSQL
import StrataStoreKit

/// Comparisons of Codable attributes with SQLite's JSON functions (`json_each`, `json_type`,
/// `json_extract`, `json_array_length`), by the rules of `JSONComparison` (docs/QUERY-SEMANTICS.md, "Codable
/// attributes"). Subscripts are path steps (`'$.stops[0].city'`, `'$[#-1]'` for `[LAST]`). `@sum`, `@avg`,
/// `@min`, `@max` and member names SQLite's JSON paths cannot quote go through `strata_json` instead.
extension SQLiteDialect {
  /// `column` (a Codable attribute's text) compared as `comparison` says, `rhs` its checked constant: in
  /// SQLite's JSON functions, or through `strata_json` (JSONComparison itself) for the folds they cannot
  /// compute as the evaluator does.
  static func jsonComparison(
    _ column: String, _ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value, entity: String
  ) throws -> Fragment {
    if let native = try nativeJSONComparison(column, path, comparison, rhs, entity: entity) { return native }
    let test = SQLiteFunctions.jsonTest(path, comparison, rhs)
    return Fragment("\(SQLiteFunctions.jsonFunction)(\(column), ?)", [.text(test)])
  }

  /// `column` compared in SQLite's JSON functions; `nil` when `strata_json` must answer.
  private static func nativeJSONComparison(
    _ column: String, _ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value, entity: String
  ) throws -> Fragment? {
    var jsonPath = "'$"
    for member in path.members {
      switch member {
      case .key(let key):
        guard !key.contains("\"") && !key.contains("\\") && !key.contains("\u{0}") else { return nil }
        jsonPath += ".\"" + key.replacingOccurrences(of: "'", with: "''") + "\""
      // No array is longer than Int32.max elements; a larger index reads nil either way.
      case .index(let n): jsonPath += "[\(min(n, Int(Int32.max)))]"
      case .last: jsonPath += "[#-1]"
      }
    }
    jsonPath += "'"
    let node = JSONNode(
      type: "COALESCE(json_type(\(column), \(jsonPath)), 'null')", value: "json_extract(\(column), \(jsonPath))")
    let each = "json_each(\(column), \(jsonPath)) AS je"
    let element = JSONNode(type: "je.type", value: "je.value")
    let op = comparison.op
    let options = comparison.options
    switch path.memberFold {
    case .count?:
      let count =
        "(CASE \(node.type) WHEN 'array' THEN json_array_length(\(column), \(jsonPath)) WHEN 'object' THEN (SELECT COUNT(*) FROM \(each)) END)"
      return try compare(
        Operand(fragment: Fragment(count), nullable: true, kind: .other, isComputed: true), op, constant(rhs), options,
        entity: entity)
    case .some: return nil
    case nil: break
    }
    switch comparison.modifier {
    case .any:
      return Fragment("(CASE \(node.type) WHEN 'array' THEN EXISTS (SELECT 1 FROM \(each) WHERE ")
        + (try element.test(op, rhs, options, entity: entity)) + Fragment(") WHEN 'null' THEN 0 ELSE ")
        + (try node.test(op, rhs, options, entity: entity)) + Fragment(" END)")
    case .all:
      return Fragment("(CASE \(node.type) WHEN 'array' THEN NOT EXISTS (SELECT 1 FROM \(each) WHERE NOT ")
        + (try element.test(op, rhs, options, entity: entity)) + Fragment(") WHEN 'null' THEN 1 ELSE ")
        + (try node.test(op, rhs, options, entity: entity)) + Fragment(" END)")
    case .none:
      return Fragment("(CASE \(node.type) WHEN 'array' THEN NOT EXISTS (SELECT 1 FROM \(each) WHERE ")
        + (try element.test(op, rhs, options, entity: entity)) + Fragment(") WHEN 'null' THEN 1 ELSE NOT ")
        + (try node.test(op, rhs, options, entity: entity)) + Fragment(" END)")
    case .direct:
      guard op == .contains else { return try node.test(op, rhs, options, entity: entity) }
      let substring: Fragment =
        rhs.stringValue == nil
        ? "0" : try compare(node.operand(.string), .contains, constant(rhs), options, entity: entity)
      return Fragment("(CASE \(node.type) WHEN 'array' THEN EXISTS (SELECT 1 FROM \(each) WHERE ")
        + (try element.test(.equalTo, rhs, options, entity: entity)) + Fragment(") WHEN 'text' THEN ") + substring
        + Fragment(" ELSE 0 END)")
    }
  }

  /// A JSON value as SQL: its `json_type` (`'null'` when missing) and its SQL value.
  private struct JSONNode {
    var type: String
    var value: String

    func operand(_ kind: Kind) -> Operand {
      Operand(fragment: Fragment(value), nullable: true, kind: kind)
    }

    /// The value compared with `rhs`: an array or object is only `!= nil`; a scalar of another kind than
    /// `rhs` is unequal and unordered; otherwise the value rules (0 or 1, never NULL).
    func test(_ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions, entity: String) throws -> Fragment {
      let structured = op == .notEqualTo && rhs.isNull ? "1" : "0"
      return Fragment("(CASE WHEN \(type) IN ('array', 'object') THEN \(structured) ELSE ")
        + (try scalar(op, rhs, options, entity: entity)) + Fragment(" END)")
    }

    private func scalar(_ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions, entity: String) throws -> Fragment {
      switch (op, rhs) {
      case (.in, .array(let items)):
        return Fragment.joined(try items.map { try scalar(.equalTo, $0, options, entity: entity) }, "OR", empty: "0")
      case (.between, .array(let bounds)) where bounds.count == 2:
        return Fragment.joined(
          [
            try scalar(.greaterThanOrEqualTo, bounds[0], options, entity: entity),
            try scalar(.lessThanOrEqualTo, bounds[1], options, entity: entity),
          ], "AND", empty: "1")
      case (_, .null):
        switch op {
        case .equalTo: return Fragment("(\(type) = 'null')")
        case .notEqualTo: return Fragment("(\(type) <> 'null')")
        default: return "0"
        }
      default: break
      }
      let guardSQL: String
      let kind: Kind
      switch rhs {
      case .string:
        guardSQL = "\(type) = 'text'"
        kind = .string
      case .int, .double, .bool:
        guardSQL = "\(type) IN ('integer', 'real', 'true', 'false')"
        kind = .other
      default:
        return op == .notEqualTo ? "1" : "0"
      }
      if op == .notEqualTo {
        let equal = try compare(operand(kind), .equalTo, constant(rhs), options, entity: entity)
        return Fragment("(NOT (\(guardSQL) AND ") + equal + Fragment("))")
      }
      return Fragment("(\(guardSQL) AND ") + (try compare(operand(kind), op, constant(rhs), options, entity: entity))
        + Fragment(")")
    }
  }

  /// A checked constant (a JSON scalar, or an array of them) as an operand.
  private static func constant(_ value: Value) -> Operand {
    switch value {
    case .array(let items): Operand(fragment: "NULL", nullable: false, kind: .other, elements: items.map(constant))
    case .string(let s): Operand(fragment: Fragment("?", [.text(s)]), nullable: false, kind: .string)
    case .int(let i): Operand(fragment: Fragment("?", [.integer(i)]), nullable: false, kind: .other)
    case .bool(let b): Operand(fragment: Fragment("?", [.integer(b ? 1 : 0)]), nullable: false, kind: .other)
    case .double(let d):
      Operand(fragment: Fragment("?", [.real(d)]), nullable: false, kind: .other, isUnordered: d.isNaN)
    default: Operand(fragment: "NULL", nullable: true, isNullConstant: true, kind: .other)
    }
  }
}
