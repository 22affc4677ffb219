import Foundation
import StrataSQL
import StrataStoreKit

typealias Fragment = SQLFragment<PostgresDialect>
typealias Operand = SQLOperand<PostgresDialect>
typealias PostgresQueryCompiler = SQLQueryCompiler<PostgresDialect>

extension SQLFragment where Dialect == PostgresDialect {
  /// The SQL with its `?` placeholders numbered `$start`, `$start+1`, ….
  func numbered(from start: Int = 1) -> String {
    var result = ""
    result.reserveCapacity(sql.utf8.count + bindings.count * 2)
    var n = start
    for character in sql {
      if character == "?" {
        result += "$\(n)"
        n += 1
      } else {
        result.append(character)
      }
    }
    return result
  }
}

/// PostgreSQL's spelling of the shared query compiler's questions (see `SQLQueryCompiler`), so the server
/// does the filtering, sorting and folding. Conditions are booleans that are never NULL (`COALESCE(…,
/// FALSE)`, `IS NOT DISTINCT FROM`):
/// - `[c]` folds with `lower`, `[d]` decomposes (NFD) and strips combining marks; a constant `LIKE`
///   pattern becomes an anchored regular expression (`?` is one visible character, as in the evaluator),
///   a pattern from a column SQL `LIKE`; `MATCHES` the anchored regular expression `~` (`~*` with `[c]`);
/// - strings are `COLLATE "C"` (code-point order); `localizedStandard` sorts by the folded text with
///   zero-padded digit runs, ties broken by code point;
/// - functions and folds are the server's own, cast so they compute as the evaluator does.
enum PostgresDialect: SQLDialect {
  typealias Schema = PostgresSchema

  static let flatJunctionLimit: Int? = nil
  static let trueLiteral = "TRUE"
  static let falseLiteral = "FALSE"
  static let groupOrder = " ASC NULLS FIRST"

  static func tableName(_ table: String, in schema: PostgresSchema) -> String { schema.qualify(table) }
  static func text(_ text: String) -> PGParameter { .text(text) }
  static func integer(_ value: Int64) -> PGParameter { .int(value) }

  static func bind(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> PGParameter {
    switch value {
    case .decimal(let d):
      if case .attribute(.decimal) = kind { return .text("\(d)", oid: PGType.numeric) }
      return value.numericValue.map(PGParameter.double) ?? .null
    case .url(let url):
      return .string(url.absoluteString)
    default:
      return PostgresSchema.encode(value)
    }
  }

  static func comparesAsString(_ type: AttributeType) -> Bool { type == .string || type == .url }

  static func attributeValue(_ sql: String, _ attribute: AttributeDescription) -> String { sql }

  /// The `ORDER BY` terms of one sort descriptor. NULLs sort first ascending, as in every backend.
  static func orderTerms(_ column: String, _ attribute: AttributeDescription, _ sort: QuerySort) -> [String] {
    let direction = sort.ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST"
    guard attribute.type == .string else { return [column + direction] }
    switch sort.comparator {
    case .default: return [column + direction]
    case .caseInsensitive: return [Self.fold(column, .caseInsensitive) + direction, column + direction]
    case .localized:
      return [Self.fold(column, [.caseInsensitive, .diacriticInsensitive]) + direction, column + direction]
    case .localizedStandard:
      // Folded, with every digit run zero-padded to 40 digits so that runs compare by value, as
      // StringSemantics.localizedStandardCompare does; ties broken by code point.
      let folded = Self.fold(column, [.caseInsensitive, .diacriticInsensitive])
      let key =
        "COALESCE((SELECT string_agg(CASE WHEN part[1] ~ '^[0-9]' THEN lpad(ltrim(part[1], '0'), 40, '0') "
        + "ELSE part[1] END, '' ORDER BY n) FROM regexp_matches(\(folded), '[0-9]+|[^0-9]+', 'g') "
        + "WITH ORDINALITY AS parts(part, n)), '') COLLATE \"C\""
      return [key + direction, column + direction]
    }
  }

  static func aggregate(
    _ op: ResolvedKeyPath.AggregateOperator, of column: String, _ attribute: AttributeDescription
  ) -> String {
    let isFloating = attribute.type == .double || attribute.type == .float
    return switch op {
    case .sum: isFloating ? "COALESCE(SUM(\(column)), 0)" : "COALESCE(SUM(\(column)), 0)::bigint"
    case .avg: "AVG(\(column)::double precision)"
    case .min: "MIN(\(column))"
    case .max: "MAX(\(column))"
    }
  }

  // MARK: Functions

  static func textFunction(_ name: String) -> ((Fragment) -> Fragment)? {
    switch name {
    case "lowercase:": { Fragment("(lower((") + $0 + Fragment(") COLLATE \"und-x-icu\") COLLATE \"C\")") }
    case "uppercase:": { Fragment("(upper((") + $0 + Fragment(") COLLATE \"und-x-icu\") COLLATE \"C\")") }
    case "canonical:": { Fragment(fold("(" + $0.sql + ")", [.caseInsensitive, .diacriticInsensitive]), $0.bindings) }
    default: nil
    }
  }

  static func numericFunction(_ name: String, _ arguments: [Fragment]) -> Fragment {
    switch name {
    case "raise:toPower:":
      Fragment("power((") + arguments[0] + Fragment(")::double precision, (") + arguments[1]
        + Fragment(")::double precision)")
    case "modulus:by:":
      Fragment("CASE WHEN (") + arguments[1] + Fragment(") = 0 THEN NULL ELSE mod(") + arguments[0] + Fragment(", ")
        + arguments[1] + Fragment(") END")
    default: unary(name, arguments[0])
    }
  }

  private static func unary(_ name: String, _ x: Fragment) -> Fragment {
    let d = Fragment("(") + x + Fragment(")::double precision")
    switch name {
    case "abs:":
      return Fragment("CASE WHEN (") + x
        + Fragment(")::double precision = -9223372036854775808 THEN 9223372036854775808::double precision ELSE abs(")
        + x + Fragment(") END")
    case "sqrt:": return Fragment("CASE WHEN ") + d + Fragment(" >= 0 THEN sqrt(") + d + Fragment(") END")
    case "log:": return Fragment("CASE WHEN ") + d + Fragment(" > 0 THEN log(") + d + Fragment(") END")
    case "ln:": return Fragment("CASE WHEN ") + d + Fragment(" > 0 THEN ln(") + d + Fragment(") END")
    case "exp:": return Fragment("CASE WHEN ") + d + Fragment(" < 709 THEN exp(") + d + Fragment(") END")
    case "floor:": return Fragment("floor(") + d + Fragment(")")
    case "ceiling:": return Fragment("ceil(") + d + Fragment(")")
    default: return Fragment("trunc(") + d + Fragment(")")
    }
  }

  /// Booleans count as 0/1; small integers widen, so arithmetic does not overflow their type.
  static func numericArgument(_ argument: Fragment, _ type: AttributeType) -> Fragment {
    if type == .bool { return Fragment("(") + argument + Fragment(")::int") }
    if type == .int16 || type == .int32 { return Fragment("(") + argument + Fragment(")::bigint") }
    return argument
  }

  static func division(_ left: Fragment, _ right: Fragment) -> (Fragment, Fragment) {
    (Fragment("(") + left + Fragment(")::double precision"), Fragment("NULLIF((") + right + Fragment(")::double precision, 0)"))
  }

  /// The SQL aggregate of a collection function over `x`.
  static func collectionAggregate(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment {
    switch function {
    case .sum: return Fragment("SUM(") + x + Fragment(isFloating ? ")" : ")::bigint")
    case .count: return Fragment("COUNT(") + x + Fragment(")")
    case .min: return Fragment("MIN(") + x + Fragment(")")
    case .max: return Fragment("MAX(") + x + Fragment(")")
    case .average: return Fragment("AVG((") + x + Fragment(")::double precision)")
    case .median:
      return Fragment("percentile_cont(0.5) WITHIN GROUP (ORDER BY (") + x + Fragment(")::double precision)")
    case .mode: return Fragment("mode() WITHIN GROUP (ORDER BY ") + x + Fragment(")")
    case .stddev: return Fragment("stddev_pop((") + x + Fragment(")::double precision)")
    }
  }

  /// The aggregate over a `VALUES` list of the items (text when an item is a string, else double precision).
  static func collectionOfItems(_ function: CollectionFunction, _ items: [Operand]) -> Operand {
    // VALUES needs one type per column: text when an item is a string, else double precision.
    let cast = items.contains { $0.kind == .string } ? "::text" : "::double precision"
    let values = Fragment.joined(
      items.map { Fragment("((") + $0.fragment + Fragment(")\(cast))") }, "), (", empty: "NULL")
    let rows = Fragment("(SELECT ") + collectionAggregate(function, Fragment("v"), isFloating: true)
    let list = values.sql.hasPrefix("(") ? values : Fragment("(") + values + Fragment(")")
    let sql = rows + Fragment(" FROM (VALUES ") + list + Fragment(") AS items(v))")
    let kind: SQLOperandKind = items.contains { $0.kind == .string } ? .string : .other
    let wrapped = function == .sum || function == .count ? Fragment("COALESCE(") + sql + Fragment(", 0)") : sql
    return Operand(fragment: wrapped, kind: kind)
  }

  static func dictionaryAggregate(_ function: CollectionFunction, _ x: Fragment, _ decoding: SQLColumnDecoding) -> Fragment {
    var isFloating = false
    if case .attribute(let type) = decoding { isFloating = type == .double || type == .float }
    let sql = collectionAggregate(function, x, isFloating: isFloating)
    return function == .sum ? Fragment("COALESCE(") + sql + Fragment(", 0)") : sql
  }

  // MARK: Comparisons

  static func inList(_ left: Operand, _ items: [Operand], folds: Bool) -> Fragment? { nil }

  static func same(_ left: Fragment, _ right: Fragment) -> Fragment {
    Fragment("((") + left + Fragment(") IS NOT DISTINCT FROM (") + right + Fragment("))")
  }

  static func order(_ left: Operand, _ op: ComparisonOperator, _ right: Operand) -> Fragment {
    let comparison = Fragment("((") + left.fragment + Fragment(") \(op.rawValue) (") + right.fragment + Fragment("))")
    return Fragment("COALESCE(") + comparison + Fragment(", FALSE)")
  }

  static func real(_ value: Fragment) -> Fragment { Fragment("(") + value + Fragment(")::double precision") }

  /// `sql` folded for a comparison under `options`, as ``StringSemantics/fold(_:_:)`` folds: `[d]`
  /// decomposes (NFD) and drops the combining diacritical marks, `[c]` lowercases with ICU's full mappings
  /// and folds what lowercasing leaves apart (ß → ss, ς → σ), then the result is recomposed (NFC). The
  /// result is `COLLATE "C"`, compared by code point.
  static func fold(_ sql: String, _ options: StringOptions) -> String {
    if options.contains(.normalized) || (!options.contains(.caseInsensitive) && !options.contains(.diacriticInsensitive)) {
      return sql
    }
    var result = "(\(sql))::text"
    if options.contains(.diacriticInsensitive) {
      result = "regexp_replace(normalize(\(result), NFD), '[\\u0300-\\u036f]', '', 'g')"
    }
    if options.contains(.caseInsensitive) {
      result = "replace(replace(lower((\(result)) COLLATE \"und-x-icu\"), 'ß', 'ss'), 'ς', 'σ')"
    }
    return "(normalize(\(result), NFC) COLLATE \"C\")"
  }

  /// An operand folded under `options`: a string constant folded here, exactly as the evaluator folds it.
  private static func foldedOperand(_ operand: Operand, _ options: StringOptions) -> Fragment {
    if case .string(let text)? = operand.constant {
      return Fragment("(?::text)", [.string(StringSemantics.fold(text, options))])
    }
    return folded(operand, options)
  }

  /// An operand folded under `options` in SQL. One without bound values (a column) is folded by ``fold(_:_:)``
  /// only when it holds non-ASCII text: ASCII text (as many bytes as characters) folds to itself lowercased
  /// under `[c]` and to itself under `[d]` alone, as ``StringSemantics/fold(_:_:)`` folds it, without ICU's
  /// lowercasing and the two normalizations per row. (Counting characters apart from bytes needs a UTF-8
  /// database, which `normalize()` in the full fold needs already.)
  private static func folded(_ operand: Operand, _ options: StringOptions) -> Fragment {
    let sql = operand.fragment.sql
    let full = fold(sql, options)
    guard operand.fragment.bindings.isEmpty, full != sql else { return Fragment(full, operand.fragment.bindings) }
    let text = "(\(sql))::text"
    let ascii = options.contains(.caseInsensitive) ? "lower(\(text) COLLATE \"C\")" : text
    return Fragment(
      "(CASE WHEN octet_length(\(text)) = char_length(\(text)) THEN (\(ascii) COLLATE \"C\") ELSE \(full) END)")
  }

  /// A string operator under `options`, as a boolean that is never NULL.
  static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment {
    let options: StringOptions = options.contains(.normalized) ? [] : options
    let l = Fragment("(") + foldedOperand(left, options) + Fragment(")::text")
    if let test = constantLike(l, op, right, options) { return test }
    let r = Fragment("(") + foldedOperand(right, options) + Fragment(")::text")
    let test: Fragment
    switch op {
    case .equalTo: test = l + Fragment(" = ") + r
    case .notEqualTo: test = Fragment("NOT (") + l + Fragment(" = ") + r + Fragment(")")
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      test = l + Fragment(" COLLATE \"C\" \(op.rawValue) ") + r + Fragment(" COLLATE \"C\"")
    case .contains: test = Fragment("(") + r + Fragment(" <> '' AND strpos(") + l + Fragment(", ") + r + Fragment(") > 0)")
    case .beginsWith: test = Fragment("(") + r + Fragment(" <> '' AND starts_with(") + l + Fragment(", ") + r + Fragment("))")
    case .endsWith:
      test =
        Fragment("(") + r + Fragment(" <> '' AND right(") + l + Fragment(", length(") + r + Fragment(")) = ") + r
        + Fragment(")")
    case .in: test = Fragment("(") + l + Fragment(" <> '' AND strpos(") + r + Fragment(", ") + l + Fragment(") > 0)")
    case .like:
      guard case .string(let pattern)? = right.constant else {
        test = l + Fragment(" LIKE ") + likePattern(right, options) + Fragment(" ESCAPE '\\'")
        break
      }
      test =
        l + Fragment(" COLLATE \"C\" ~ ?", [.string("^" + likeRegex(StringSemantics.fold(pattern, options)) + "$")])
    case .matches:
      let dropsDiacritics: StringOptions = options.contains(.diacriticInsensitive) ? .diacriticInsensitive : []
      let subject = Fragment(fold("(" + left.fragment.sql + ")::text", dropsDiacritics), left.fragment.bindings)
      let pattern: Fragment
      if case .string(let text)? = right.constant {
        pattern = Fragment("?", [.string("^(" + regex(StringSemantics.fold(text, dropsDiacritics)) + ")$")])
      } else {
        pattern =
          Fragment("('^(' || ") + Fragment(fold("(" + right.fragment.sql + ")::text", dropsDiacritics), right.fragment.bindings)
          + Fragment(" || ')$')")
      }
      let op = options.contains(.caseInsensitive) ? "~*" : "~"
      test = Fragment("((") + subject + Fragment(") COLLATE \"und-x-icu\" \(op) ") + pattern + Fragment(")")
    case .between: test = "FALSE"
    }
    return Fragment("COALESCE(") + test + Fragment(", FALSE)")
  }

  /// `CONTAINS`, `BEGINSWITH` or `ENDSWITH` of a string constant as `((x LIKE p) IS TRUE)`, where `p` is
  /// the folded constant with its `%`, `_` and `\` escaped and `%` around, after or before it; `nil` for
  /// any other operator or a needle that is not a constant. On the COLLATE "C" text `x` is, `LIKE` matches
  /// what `strpos`, `starts_with` and `right` match (it steps whole characters, and every occurrence of a
  /// whole needle starts at one), and `IS TRUE` is never NULL, as `COALESCE(…, FALSE)` is. Unlike a
  /// function's result, which the planner guesses matches half the table (so a sorted search at 1M rows
  /// planned a serial scan and JIT compilation for 500,000 rows), a `LIKE` is estimated from its pattern;
  /// and a prefix `LIKE` runs faster than `starts_with`, which copies a substring per row. An empty folded
  /// needle matches nothing.
  private static func constantLike(
    _ l: Fragment, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment? {
    guard op == .contains || op == .beginsWith || op == .endsWith, case .string(let text)? = right.constant else { return nil }
    let needle = StringSemantics.fold(text, options)
    guard !needle.isEmpty else { return "FALSE" }
    var escaped = ""
    for scalar in needle.unicodeScalars {
      if scalar == "%" || scalar == "_" || scalar == "\\" { escaped.unicodeScalars.append("\\") }
      escaped.unicodeScalars.append(scalar)
    }
    let pattern = op == .beginsWith ? escaped + "%" : op == .endsWith ? "%" + escaped : "%" + escaped + "%"
    return Fragment("((") + l + Fragment(" LIKE ?) IS TRUE)", [.string(pattern)])
  }

  /// One user-perceived character as a PostgreSQL regular expression: a code point, then any combining
  /// marks, variation selectors, skin-tone modifiers and zero-width-joined code points (`LIKE`'s `?`).
  static let characterRegex =
    "(?:.(?:[\\u0300-\\u036f\\u1ab0-\\u1aff\\u1dc0-\\u1dff\\u20d0-\\u20ff\\ufe00-\\ufe0f\\ufe20-\\ufe2f]"
    + "|[\\U0001f3fb-\\U0001f3ff]|\\u200d.)*)"

  /// A folded Strata `LIKE` pattern (`*` any run, `?` one character, `\x` a literal `x`) as a regular
  /// expression body.
  static func likeRegex(_ pattern: String) -> String {
    var result = ""
    var escaped = false
    for character in pattern {
      if escaped {
        result += literal(character)
        escaped = false
        continue
      }
      switch character {
      case "\\": escaped = true
      case "*": result += ".*"
      case "?": result += characterRegex
      default: result += literal(character)
      }
    }
    if escaped { result += literal("\\") }
    return result
  }

  /// `character` matched literally in a regular expression (ASCII punctuation escaped).
  private static func literal(_ character: Character) -> String {
    guard character.isASCII, !character.isLetter, !character.isNumber, character != " " else { return String(character) }
    return "\\" + String(character)
  }

  /// An ICU pattern as PostgreSQL's: the Unicode properties PostgreSQL lacks spelled as ranges or classes.
  static func regex(_ pattern: String) -> String {
    let properties: [(String, String)] = [
      (
        "\\p{Han}",
        "[\\u2e80-\\u2fdf\\u3005\\u3007\\u3021-\\u3029\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\U00020000-\\U0003134f]"
      ),
      ("\\p{Hangul}", "[\\u1100-\\u11ff\\u3130-\\u318f\\ua960-\\ua97f\\uac00-\\ud7af\\ud7b0-\\ud7ff]"),
      ("\\p{L}", "[[:alpha:]]"), ("\\p{Lu}", "[[:upper:]]"), ("\\p{Ll}", "[[:lower:]]"), ("\\p{N}", "[[:digit:]]"),
      ("\\p{Nd}", "[[:digit:]]"),
    ]
    var result = pattern
    for (property, replacement) in properties { result = result.replacingOccurrences(of: property, with: replacement) }
    return result
  }

  /// A Strata `LIKE` pattern (`*` any run, `?` one character, `\x` a literal `x`) as SQL's: a constant is
  /// translated here, anything else in SQL.
  private static func likePattern(_ pattern: Operand, _ options: StringOptions) -> Fragment {
    if case .string(let text)? = pattern.constant {
      var sql = ""
      var escaped = false
      for character in text {
        if escaped {
          if "%_\\".contains(character) { sql.append("\\") }
          sql.append(character)
          escaped = false
          continue
        }
        switch character {
        case "\\": escaped = true
        case "*": sql.append("%")
        case "?": sql.append("_")
        case "%", "_": sql += "\\" + String(character)
        default: sql.append(character)
        }
      }
      if escaped { sql += "\\\\" }
      return Fragment(fold("(?::text)", options), [.string(sql)])
    }
    let translated =
      "replace(replace(replace(replace(\(fold("(" + pattern.fragment.sql + ")::text", options)), '%', '\\%'), '_', '\\_'), '*', '%'), chr(63), '_')"
    return Fragment(translated, pattern.fragment.bindings)
  }
}
