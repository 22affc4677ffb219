import Foundation
import StrataSQL
import StrataStoreKit

/// Comparisons of Codable attributes in SQL: the rules of `JSONComparison` (docs/QUERY-SEMANTICS.md,
/// "Codable attributes") over the column read as `jsonb`.
extension PostgresDialect {
  /// `column` (a Codable attribute's text) compared as `comparison` says, `rhs` its checked constant.
  static func jsonComparison(
    _ column: String, _ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value, entity: String
  ) throws -> Fragment {
    var node = "(\(column))::jsonb"
    for member in path.members {
      switch member {
      case .key(let key): node = "(\(node) -> \(literal(key)))"
      // `->` would read a scalar as a one-element array; a strict JSON path subscripts only an array, and
      // `silent` makes a missing element (past the end, of an empty array, of a non-array) NULL. The index
      // is an int4 (no array is longer, so a larger one reads nil either way).
      case .index(let n): node = "jsonb_path_query_first(\(node), 'strict $[\(min(n, Int(Int32.max)))]', '{}', true)"
      case .last: node = "jsonb_path_query_first(\(node), 'strict $[last]', '{}', true)"
      }
    }
    let op = comparison.op
    let options = comparison.options
    if let fold = path.memberFold {
      let left = Operand(fragment: Fragment(foldSQL(fold, node, rhs)), kind: rhs.stringValue != nil ? .string : .other)
      return try compare(left, op, rhs, options, entity: entity)
    }
    switch comparison.modifier {
    case .any:
      return Fragment("EXISTS (SELECT 1 FROM jsonb_array_elements(\(elements(node))) AS j(e) WHERE ")
        + (try element("j.e", op, rhs, options, entity: entity)) + Fragment(")")
    case .all:
      return Fragment("NOT EXISTS (SELECT 1 FROM jsonb_array_elements(\(elements(node))) AS j(e) WHERE NOT ")
        + (try element("j.e", op, rhs, options, entity: entity)) + Fragment(")")
    case .none:
      return Fragment("NOT EXISTS (SELECT 1 FROM jsonb_array_elements(\(elements(node))) AS j(e) WHERE ")
        + (try element("j.e", op, rhs, options, entity: entity)) + Fragment(")")
    case .direct:
      guard op == .contains else { return try element(node, op, rhs, options, entity: entity) }
      let membership =
        Fragment("EXISTS (SELECT 1 FROM jsonb_array_elements(\(node)) AS j(e) WHERE ")
        + (try element("j.e", .equalTo, rhs, options, entity: entity)) + Fragment(")")
      let substring: Fragment =
        rhs.stringValue == nil ? "FALSE" : try compare(scalar(node, for: rhs), .contains, rhs, options, entity: entity)
      return Fragment("COALESCE(CASE jsonb_typeof(\(node)) WHEN 'array' THEN ") + membership
        + Fragment(" WHEN 'string' THEN ") + substring + Fragment(" ELSE FALSE END, FALSE)")
    }
  }

  /// What `ANY`/`ALL`/`NONE` range over: an array's elements, none for null, the value itself otherwise.
  private static func elements(_ node: String) -> String {
    "CASE COALESCE(jsonb_typeof(\(node)), 'null') WHEN 'array' THEN \(node) WHEN 'null' THEN '[]'::jsonb ELSE jsonb_build_array(\(node)) END"
  }

  /// One JSON value `e` compared with `rhs`: an array or object is only `!= nil`, a scalar compares by the
  /// value rules (never NULL).
  private static func element(
    _ e: String, _ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions, entity: String
  ) throws -> Fragment {
    if op == .notEqualTo && rhs.isNull { return Fragment("COALESCE(jsonb_typeof(\(e)) <> 'null', FALSE)") }
    let isScalar = Fragment("COALESCE(jsonb_typeof(\(e)) NOT IN ('array', 'object'), TRUE)")
    let test: Fragment
    switch (op, rhs) {
    case (.in, .array(let items)):
      var parts: [Fragment] = []
      for item in items { parts.append(try compare(scalar(e, for: item), .equalTo, item, options, entity: entity)) }
      test = Fragment.joined(parts, "OR", empty: "FALSE")
    case (.between, .array(let bounds)) where bounds.count == 2:
      test = Fragment.joined(
        [
          try compare(scalar(e, for: bounds[0]), .greaterThanOrEqualTo, bounds[0], options, entity: entity),
          try compare(scalar(e, for: bounds[1]), .lessThanOrEqualTo, bounds[1], options, entity: entity),
        ], "AND", empty: "TRUE")
    default:
      test = try compare(scalar(e, for: rhs), op, rhs, options, entity: entity)
    }
    return Fragment("(") + isScalar + Fragment(" AND ") + test + Fragment(")")
  }

  /// The JSON value `e` read as the kind of `rhs`: text for a string (NULL for any other JSON value), a
  /// number for a number or Boolean (JSON `true`/`false` as 1/0, as the evaluator compares them), and
  /// the value itself (NULL for JSON `null`) for a nil test.
  private static func scalar(_ e: String, for rhs: Value) -> Operand {
    switch rhs {
    case .string:
      return Operand(
        fragment: Fragment("((CASE WHEN jsonb_typeof(\(e)) = 'string' THEN \(e) #>> '{}' END) COLLATE \"C\")"),
        kind: .string)
    case .null:
      return Operand(fragment: Fragment("NULLIF(\(e), 'null'::jsonb)"), kind: .other)
    default:
      return Operand(fragment: Fragment(number(e)), kind: .other)
    }
  }

  private static func number(_ e: String) -> String {
    "(CASE jsonb_typeof(\(e)) WHEN 'number' THEN (\(e) #>> '{}')::numeric WHEN 'boolean' THEN (CASE WHEN \(e) = 'true'::jsonb THEN 1 ELSE 0 END)::numeric END)"
  }

  /// `@count` (an array's elements or an object's keys), `@sum`, `@avg`, `@min`, `@max` of an array.
  private static func foldSQL(_ fold: ResolvedKeyPath.MemberFold, _ node: String, _ rhs: Value) -> String {
    let rows = "jsonb_array_elements(\(node)) AS j(e)"
    let value: String
    switch fold {
    case .count:
      return
        "(CASE jsonb_typeof(\(node)) WHEN 'array' THEN jsonb_array_length(\(node)) WHEN 'object' THEN (SELECT count(*) FROM jsonb_object_keys(\(node))) END)"
    case .sum: value = "COALESCE(SUM(\(number("j.e"))), 0)"
    case .avg: value = "AVG(\(number("j.e")))"
    case .min, .max:
      // Defined when the non-null elements are all strings or all numbers (Booleans as 1/0).
      let function = fold == .min ? "MIN" : "MAX"
      let present = "count(*) FILTER (WHERE jsonb_typeof(j.e) NOT IN ('null', 'array', 'object'))"
      let strings = "count(*) FILTER (WHERE jsonb_typeof(j.e) = 'string')"
      let numbers = "count(*) FILTER (WHERE jsonb_typeof(j.e) IN ('number', 'boolean'))"
      switch rhs {
      case .string:
        value =
          "CASE WHEN \(present) = \(strings) THEN \(function)((CASE WHEN jsonb_typeof(j.e) = 'string' THEN j.e #>> '{}' END) COLLATE \"C\") END"
      case .null:
        value = "CASE WHEN \(present) > 0 AND (\(present) = \(strings) OR \(present) = \(numbers)) THEN 1 END"
      default:
        value = "CASE WHEN \(present) = \(numbers) THEN \(function)(\(number("j.e"))) END"
      }
    }
    return "(CASE WHEN jsonb_typeof(\(node)) = 'array' THEN (SELECT \(value) FROM \(rows)) END)"
  }

  private static func compare(
    _ left: Operand, _ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions, entity: String
  ) throws -> Fragment {
    try compare(left, op, constantOperand(rhs), options, entity: entity)
  }

  /// A checked constant as an operand (arrays for `IN`, `BETWEEN`).
  private static func constantOperand(_ value: Value) -> Operand {
    switch value {
    case .array(let items): return Operand(fragment: "NULL", kind: .other, elements: items.map(constantOperand))
    case .null: return Operand(fragment: "NULL", isNullConstant: true, kind: .other)
    case .string(let s): return Operand(fragment: Fragment("?", [.string(s)]), kind: .string, constant: value)
    case .bool(let b): return Operand(fragment: Fragment("(?)::numeric", [.int(b ? 1 : 0)]), kind: .other, constant: value)
    case .int(let i): return Operand(fragment: Fragment("(?)::numeric", [.int(i)]), kind: .other, constant: value)
    case .double(let d):
      return Operand(fragment: Fragment("?", [.double(d)]), kind: .other, isUnordered: d.isNaN, constant: value)
    default: return Operand(fragment: "NULL", isNullConstant: true, kind: .other)
    }
  }

  private static func literal(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'::text"
  }
}
