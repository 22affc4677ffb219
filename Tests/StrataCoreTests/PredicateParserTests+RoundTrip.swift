import Foundation
import Testing

@testable import StrataCore

/// Format strings covering the grammar; each must parse, and its description must parse back equal.
let predicateSampleFormats: [String] = [
  "title == 'Heat'", "title = \"Heat\"", "year != 1995", "year <> 1995", "rating < 4.5", "rating <= 4.5",
  "rating =< 4.5", "rating > -1", "rating >= 1e3", "rating => 0x1F", "year BETWEEN {1990, 1999}",
  "genre IN {'drama', 'crime'}", "genre IN tags", "title CONTAINS[c] 'heat'", "title BEGINSWITH[cd] 'the'",
  "title ENDSWITH[d] 'ée'", "title LIKE 'H?at*'", "title MATCHES '^H.*t$'", "title ==[n] 'x'",
  "ANY actors.name == 'Pacino'", "SOME actors.name == 'Pacino'", "ALL ratings.stars > 2",
  "NONE ratings.stars < 1", "director.name == nil", "director == NULL", "watched == YES AND liked == FALSE",
  "a == 1 OR b == 2 AND c == 3", "(a == 1 OR b == 2) AND NOT c == 3", "!(a == 1) || b == 2 && c == 3",
  "NOT NOT a == 1", "TRUEPREDICATE", "FALSEPREDICATE OR TRUEPREDICATE", "movies.@count > 2",
  "items.price.@sum > 10", "items.@avg.price < 5", "items.price.@min == 1 AND items.price.@max == 9",
  "#in == 1 AND #self.#all == 2", "SELF == $obj", "SELF.title == 'x'", "title == $TITLE",
  "SUBQUERY(items, $i, $i.price > 5).@count > 0",
  "SUBQUERY(items, $i, $i.price > 5 AND SUBQUERY($i.parts, $p, $p.ok == YES).@count == 0).@count == 1",
  "count:(SUBQUERY(items, $i, ANY $i.tags.name == 'x')) > 0", "now() > releaseDate", "random() < 0.5",
  "lowercase:(title) == 'heat'", "uppercase:(title) BEGINSWITH 'H'", "canonical:(title) CONTAINS 'creme'",
  "sum:(items.price) > 10", "count:(tags) == 2", "min:(1, 2, 3) == 1", "max:({a, b}) == 1",
  "average:(scores) > median:(scores)", "mode:(scores) == stddev:(scores)", "abs:(delta) < 1",
  "sqrt:(x) + log:(y) + ln:(z) > exp:(w)", "floor:(x) == ceiling:(y) - trunc:(z)",
  "a + b * c - d / e ** f ** g > 0", "(a + b) * (c - d) == -(e)", "-a < 2", "- -a < 2", "a - -2 == 0",
  "-2 ** 2 == 4", "(a - b) - (c - d) == 0", "(2 ** 3) ** 2 == 64", "a * (b / c) == a * b / c",
  "stamp > CAST(700000000, 'NSDate')", "CAST(stamp, 'NSDate') < now()", "CAST($v, 'NSNumber') == 1",
  "price == CAST('12.50', 'NSDecimalNumber')", "id == CAST('E621E1F8-C36C-495A-93FC-0C247A3E6E5F', 'UUID')",
  "home == CAST('https://example.org/a%20b?c=1#d', 'NSURL')", "blob == CAST('00ff7f', 'NSData')",
  "owner == CAST('strata://S1/Person/p7', 'ObjectID')", "x == CAST('inf', 'NSNumber')",
  "x == CAST('-inf', 'NSNumber')", "x IN {1, 'two', 3.5, nil, YES, {4, 5}}", "x IN {a, 1}", "x IN {}",
  "x BETWEEN {lo, hi}", "x BETWEEN $range", "text == 'quote\" and \\'apostrophe\\' and \\\\ and \\n\\t\\r'",
  "text == '\\u00e9\\u0301 😀 \\u0000 \\u001f'", "text == ''", "size == 3 AND first == 1 AND last == 2",
  "name == 'FIRST' AND count == 1", "café.naïve == 'ü'", "x == 9223372036854775807",
  "x == -9223372036854775808", "x == 0.1 AND y == 1e-300 AND z == 5e-324 AND w == 1.7976931348623157e308",
  "x == -0.0", "x == 0o777 + 0b1010", "a == 1 AND (b == 2 AND c == 3)", "a == 1 OR (b == 2 OR c == 3)",
  "(a == 1 AND b == 2) OR (c == 3 AND NOT (d == 4 OR e == 5))", "$x.price > 3", "ANY $x.tags == 'a'",
  "{1, 2}.@count == 2", "SELF.@count == 0", "a CONTAINS[c] lowercase:(b)", "a IN[c] {'X'}",
]

extension PredicateParserTests {
  @Test func sampleFormatsRoundTrip() throws {
    for format in predicateSampleFormats {
      let predicate = try QueryPredicate(format: format)
      let again = try QueryPredicate(format: predicate.description)
      #expect(again == predicate, "\(format) → \(predicate.description)")
      #expect(again.description == predicate.description)
    }
  }

  @Test func constantsOfEveryKindRoundTrip() throws {
    let temporary = ObjectID.makeTemporary(entityName: "Movie")
    let values: [Value] = [
      .null, .int(0), .int(-1), .int(.max), .int(.min), .double(0), .double(-0.0), .double(1.5), .double(-2.25),
      .double(1e-300), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .double(.infinity),
      .double(-.infinity), .double(1 / 3), .decimal(Decimal(string: "12.50")!), .decimal(Decimal(string: "-0.001")!),
      .decimal(Decimal(string: "123456789012345678901234567890")!), .string(""), .string("plain"),
      .string("q\"uo'te\\back\nline\ttab\rret\0nul\u{1}\u{7f}\u{2028}"), .string("é e\u{301} 😀 👩‍👩‍👧 ß"),
      .bool(true), .bool(false), .date(Date(timeIntervalSinceReferenceDate: 0)),
      .date(Date(timeIntervalSinceReferenceDate: -123_456.789)), .date(Date(timeIntervalSince1970: 1_700_000_000.25)),
      .data(Data()), .data(Data([0, 1, 254, 255])), .uuid(UUID()), .url(URL(string: "https://example.org/a?b=c#d")!),
      .url(URL(fileURLWithPath: "/tmp/some file.txt")), .url(URL(string: "mailto:someone@example.org")!),
      .objectID(ObjectID(entityName: "Movie", storeIdentifier: "3F2A-STORE", primaryKey: 12)),
      .objectID(ObjectID(entityName: "Movie", storeIdentifier: "S", primaryKey: -4)), .objectID(temporary),
      .array([]), .array([1, "a", .null, [2.5, [true]]]),
    ]
    for value in values {
      let expression = QueryExpression.constant(value)
      #expect(try QueryExpression(format: expression.description) == expression, "\(expression)")
      let predicate = QueryPredicate.comparison(Comparison(.keyPath("x"), .equalTo, expression))
      #expect(try QueryPredicate(format: predicate.description) == predicate, "\(predicate)")
    }
    let nan = try QueryExpression(format: QueryExpression.constant(.double(.nan)).description)
    guard case .constant(.double(let d)) = nan else {
      Issue.record("NaN did not parse back as a double: \(nan)")
      return
    }
    #expect(d.isNaN)
  }

  @Test func randomTreesRoundTrip() throws {
    var generator = PredicateTreeGenerator(seed: 0x5EED)
    var failures: [String] = []
    for _ in 0..<3_000 {
      let predicate = generator.predicate(depth: 4)
      let text = predicate.description
      do {
        let again = try QueryPredicate(format: text)
        if again != predicate { failures.append("\(text)\n  reparsed: \(again.description)") }
      } catch {
        failures.append("\(text)\n  error: \(error)")
      }
    }
    #expect(failures.isEmpty, "\(failures.count) failures, first: \(failures.prefix(3).joined(separator: "\n"))")
  }
}

/// Builds random trees of the shapes the parser produces.
struct PredicateTreeGenerator {
  var rng: SplitMix64
  init(seed: UInt64) { rng = SplitMix64(seed: seed) }

  private mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
  private mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

  mutating func predicate(depth: Int) -> QueryPredicate {
    let roll = depth <= 0 ? 0 : Int.random(in: 0..<10, using: &rng)
    switch roll {
    case 0...4: return comparison(depth: depth)
    case 5: return .constant(chance(50))
    case 6: return .not(predicate(depth: depth - 1))
    case 7: return .and((0..<Int.random(in: 2...4, using: &rng)).map { _ in predicate(depth: depth - 1) })
    default: return .or((0..<Int.random(in: 2...4, using: &rng)).map { _ in predicate(depth: depth - 1) })
    }
  }

  mutating func comparison(depth: Int) -> QueryPredicate {
    let op = pick(ComparisonOperator.allCases)
    let right: QueryExpression
    switch op {
    case .between:
      right =
        chance(50) ? .constant(.array([constant(), constant()])) : .aggregate([keyPath(), .constant(constant())])
    case .in:
      right = pick([.constant(.array([constant(), constant()])), .aggregate([keyPath()]), keyPath(), .constant("s")])
    default: right = expression(depth: depth - 1)
    }
    var options: StringOptions = []
    if chance(30) { options = StringOptions(rawValue: UInt8.random(in: 1...7, using: &rng)) }
    let modifier = pick([ComparisonModifier.direct, .direct, .any, .all, .none])
    return .comparison(Comparison(expression(depth: depth - 1), op, right, modifier: modifier, options: options))
  }

  mutating func keyPath() -> QueryExpression {
    let heads = ["title", "in", "self", "all", "size", "director", "items", "café", "_x", "$v", "first", "NOT"]
    let tails = ["", ".name", ".price.@sum", ".@count", ".in.@avg", ".a.b.c", ".#", ".@max"]
    let head = pick(heads)
    var tail = pick(tails).replacingOccurrences(of: ".#", with: ".y")
    if head == "$v" && tail.isEmpty { tail = ".name" }  // a bare `$v` is a variable, not a key path
    return .keyPath(head + tail)
  }

  mutating func constant() -> Value {
    switch Int.random(in: 0..<13, using: &rng) {
    case 0: return .null
    case 1: return .int(Int64.random(in: .min ... .max, using: &rng))
    case 2: return .int(Int64.random(in: -100...100, using: &rng))
    case 3: return .double(Double.random(in: -1e6...1e6, using: &rng))
    case 4: return .decimal(Decimal(Int.random(in: -9999...9999, using: &rng)) / 100)
    case 5: return .string(pick(["", "a", "it's", "say \"hi\"", "back\\slash", "tab\there", "é😀", "%@", "a\u{0}b"]))
    case 6: return .bool(chance(50))
    case 7:
      return .date(
        Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &rng)) / 8))
    case 8:
      return .data(Data((0..<Int.random(in: 0...5, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
    case 9:
      return .uuid(
        UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8.random(in: 0...255, using: &rng))))
    case 10: return .url(URL(string: pick(["https://a.org/x?y=1", "file:///tmp/a%20b", "mailto:a@b.c"]))!)
    case 11:
      return .objectID(
        ObjectID(entityName: "E", storeIdentifier: "S", primaryKey: Int64.random(in: 1...99, using: &rng)))
    default: return .array([.int(1), .string("x")])
    }
  }

  mutating func expression(depth: Int) -> QueryExpression {
    let roll = depth <= 0 ? Int.random(in: 0..<4, using: &rng) : Int.random(in: 0..<14, using: &rng)
    switch roll {
    case 0, 1: return keyPath()
    case 2: return .constant(constant())
    case 3: return pick([.variable("V"), .evaluatedObject])
    case 4...6:
      let name = pick(["add:to:", "from:subtract:", "multiply:by:", "divide:by:", "modulus:by:", "raise:toPower:"])
      return .function(name, [expression(depth: depth - 1), expression(depth: depth - 1)])
    case 7: return .function("from:subtract:", [.constant(0), keyPath()])
    case 8:
      return .function(
        pick(["lowercase:", "uppercase:", "canonical:", "abs:", "sqrt:", "floor:"]), [expression(depth: depth - 1)])
    case 9:
      return .function(
        pick(["sum:", "count:", "average:", "max:"]), [pick([keyPath(), .aggregate([keyPath(), .constant(1)])])])
    case 10: return .function(pick(["now", "random"]), [])
    case 11:
      return .function("castObject:toType:", [keyPath(), .constant(.string(pick(["NSDate", "NSNumber", "UUID"])))])
    case 12:
      return .function(
        "count:", [.subquery(collection: keyPath(), variable: "x", predicate: predicate(depth: depth - 1))])
    default: return .aggregate([keyPath(), .constant(constant()), expression(depth: depth - 1)])
    }
  }
}
