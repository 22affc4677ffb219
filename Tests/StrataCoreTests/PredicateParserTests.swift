import Foundation
import Testing

@testable import StrataCore

private func key(_ path: String) -> QueryExpression { .keyPath(path) }
private func const(_ value: Value) -> QueryExpression { .constant(value) }
private func cmp(
  _ left: QueryExpression, _ op: ComparisonOperator, _ right: QueryExpression,
  modifier: ComparisonModifier = .direct, options: StringOptions = []
) -> QueryPredicate {
  .comparison(Comparison(left, op, right, modifier: modifier, options: options))
}
private func parse(_ format: String, _ arguments: any PredicateArgument...) throws -> QueryPredicate {
  try QueryPredicate(format: format, argumentArray: arguments)
}
private func expr(_ format: String, _ arguments: any PredicateArgument...) throws -> QueryExpression {
  try QueryExpression(format: format, argumentArray: arguments)
}

@Suite struct PredicateParserTests {
  // MARK: Comparisons

  @Test func everyOperatorSpelling() throws {
    let table: [(String, ComparisonOperator)] = [
      ("==", .equalTo), ("=", .equalTo), ("!=", .notEqualTo), ("<>", .notEqualTo), ("<", .lessThan),
      ("<=", .lessThanOrEqualTo), ("=<", .lessThanOrEqualTo), (">", .greaterThan), (">=", .greaterThanOrEqualTo),
      ("=>", .greaterThanOrEqualTo), ("CONTAINS", .contains), ("beginswith", .beginsWith),
      ("EndsWith", .endsWith), ("LIKE", .like), ("MATCHES", .matches),
    ]
    for (spelling, op) in table {
      #expect(try parse("a \(spelling) 1") == cmp(key("a"), op, const(1)), "\(spelling)")
      if !spelling.first!.isLetter { #expect(try parse("a\(spelling)1") == cmp(key("a"), op, const(1))) }
    }
    #expect(try parse("a IN {1, 2}") == cmp(key("a"), .in, const([1, 2])))
    #expect(try parse("a BETWEEN {1, 5}") == cmp(key("a"), .between, const([1, 5])))
  }

  @Test func stringOptions() throws {
    #expect(try parse("t CONTAINS[c] 'x'") == cmp(key("t"), .contains, const("x"), options: .caseInsensitive))
    #expect(
      try parse("t LIKE[cd] 'x'")
        == cmp(key("t"), .like, const("x"), options: [.caseInsensitive, .diacriticInsensitive]))
    #expect(try parse("t ==[d] 'x'") == cmp(key("t"), .equalTo, const("x"), options: .diacriticInsensitive))
    #expect(try parse("t != [n] 'x'") == cmp(key("t"), .notEqualTo, const("x"), options: .normalized))
    #expect(
      try parse("t IN[DC] {'a'}")
        == cmp(key("t"), .in, const(["a"]), options: [.caseInsensitive, .diacriticInsensitive]))
    #expect(try parse("t BEGINSWITH[cdn] 'x'").description == "t BEGINSWITH[cdn] \"x\"")
  }

  @Test func betweenAndIn() throws {
    #expect(try parse("a BETWEEN %@", [1, 9]) == cmp(key("a"), .between, const([1, 9])))
    #expect(try parse("a BETWEEN %@", 1...9) == cmp(key("a"), .between, const([1, 9])))
    #expect(try parse("a BETWEEN {lo, 9}") == cmp(key("a"), .between, .aggregate([key("lo"), const(9)])))
    #expect(try parse("a IN %@", ["x", "y"]) == cmp(key("a"), .in, const(["x", "y"])))
    #expect(try parse("a IN tags") == cmp(key("a"), .in, key("tags")))
    #expect(try parse("a IN $list") == cmp(key("a"), .in, .variable("list")))
    #expect(try parse("a IN 'abc'") == cmp(key("a"), .in, const("abc")))
    #expect(try parse("a IN {}") == cmp(key("a"), .in, const([])))
    #expect(try parse("a IN {1, b}") == cmp(key("a"), .in, .aggregate([const(1), key("b")])))
  }

  @Test func modifiers() throws {
    #expect(try parse("ANY tags.name == 'x'") == cmp(key("tags.name"), .equalTo, const("x"), modifier: .any))
    #expect(try parse("some tags.name == 'x'") == cmp(key("tags.name"), .equalTo, const("x"), modifier: .any))
    #expect(try parse("ALL tags.n > 1") == cmp(key("tags.n"), .greaterThan, const(1), modifier: .all))
    #expect(try parse("NONE tags.n > 1") == cmp(key("tags.n"), .greaterThan, const(1), modifier: .none))
    #expect(try parse("NOT ANY t.n > 1") == .not(cmp(key("t.n"), .greaterThan, const(1), modifier: .any)))
  }

  // MARK: Logic

  @Test func precedence() throws {
    let a = cmp(key("a"), .equalTo, const(1))
    let b = cmp(key("b"), .equalTo, const(2))
    let c = cmp(key("c"), .equalTo, const(3))
    #expect(try parse("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
    #expect(try parse("a == 1 AND b == 2 OR c == 3") == .or([.and([a, b]), c]))
    #expect(try parse("(a == 1 OR b == 2) AND c == 3") == .and([.or([a, b]), c]))
    #expect(try parse("NOT a == 1 AND b == 2") == .and([.not(a), b]))
    #expect(try parse("NOT (a == 1 AND b == 2)") == .not(.and([a, b])))
    #expect(try parse("!a == 1 || b == 2 && c == 3") == .or([.not(a), .and([b, c])]))
    #expect(try parse("a == 1 and b == 2 and c == 3") == .and([a, b, c]))
    #expect(try parse("(a == 1 AND b == 2) AND c == 3") == .and([.and([a, b]), c]))
    #expect(try parse("NOT NOT a == 1") == .not(.not(a)))
    #expect(try parse("((a == 1))") == a)
    #expect(try parse("TRUEPREDICATE") == .true)
    #expect(try parse("falsepredicate OR TRUEPREDICATE") == .or([.false, .true]))
  }

  @Test func parenthesizedExpressionsOnTheLeft() throws {
    let sum: QueryExpression = .function("add:to:", [key("a"), key("b")])
    #expect(try parse("(a + b) > 3") == cmp(sum, .greaterThan, const(3)))
    #expect(try parse("(a + b) * 2 > 3") == cmp(.function("multiply:by:", [sum, const(2)]), .greaterThan, const(3)))
    #expect(try parse("((a + b)) * 2 > 3 AND x == 1").description == "(a + b) * 2 > 3 AND x == 1")
    #expect(try parse("(a) == 1") == cmp(key("a"), .equalTo, const(1)))
    #expect(try parse("(a + b > 3)") == cmp(sum, .greaterThan, const(3)))
  }

  // MARK: Expressions

  @Test func keyPaths() throws {
    #expect(try expr("director.name") == key("director.name"))
    #expect(try expr("movies.@count") == key("movies.@count"))
    #expect(try expr("items.price.@sum") == key("items.price.@sum"))
    #expect(try expr("items.@sum.price") == key("items.price.@sum"))
    #expect(try expr("items.@AVG.price") == key("items.price.@avg"))
    #expect(try expr("#in.#self") == key("in.self"))
    #expect(try expr("a.in.size") == key("a.in.size"))
    #expect(try expr("first") == key("first"))
    #expect(try expr("SELF") == .evaluatedObject)
    #expect(try expr("SELF.title") == key("title"))
    #expect(try expr("SELF.@count") == .function("count:", [.evaluatedObject]))
    #expect(try expr("%K", "director.name") == key("director.name"))
    #expect(try expr("%K.name", "director") == key("director.name"))
    #expect(try expr("%K", "items.@max.price") == key("items.price.@max"))
    #expect(try expr("café") == key("café"))
    #expect(try expr("_x1") == key("_x1"))
  }

  @Test func variablesAndSubqueries() throws {
    #expect(try expr("$NAME") == .variable("NAME"))
    #expect(try expr("$x.price") == key("$x.price"))
    let sub: QueryExpression = .subquery(
      collection: key("items"), variable: "i",
      predicate: .and([cmp(key("$i.price"), .greaterThan, const(5)), cmp(key("$i.name"), .like, const("a*"))]))
    #expect(try expr("SUBQUERY(items, $i, $i.price > 5 AND $i.name LIKE 'a*')") == sub)
    #expect(
      try parse("SUBQUERY(items, $i, $i.price > 5 AND $i.name LIKE 'a*').@count > 0")
        == cmp(.function("count:", [sub]), .greaterThan, const(0)))
    #expect(try expr("count:(SUBQUERY(items, $i, $i.price > 5 AND $i.name LIKE 'a*'))") == .function("count:", [sub]))
    let substituted = try parse("a == $V AND SUBQUERY(xs, $x, $x.n == $V).@count > 0")
      .substituting(["V": 3])
    #expect(substituted.description == "a == 3 AND SUBQUERY(xs, $x, $x.n == 3).@count > 0")
  }

  @Test func numbers() throws {
    let table: [(String, Value)] = [
      ("0", 0), ("42", 42), ("-42", -42), ("1.5", 1.5), ("-1.5", -1.5), (".5", 0.5), ("2e3", 2000.0),
      ("2E-3", 0.002), ("1.5e+2", 150.0), ("0x1F", 31), ("0XfF", 255), ("-0x10", -16), ("0o17", 15), ("0b101", 5),
      ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)), ("- -5", 5), ("-(5)", -5),
      ("-0.0", .double(-0.0)),
    ]
    for (text, value) in table {
      #expect(try expr(text) == const(value), "\(text)")
    }
  }

  @Test func stringsAndLiterals() throws {
    #expect(try expr(#""a\"b""#) == const("a\"b"))
    #expect(try expr(#"'it\'s'"#) == const("it's"))
    #expect(try expr(#"'say "hi"'"#) == const("say \"hi\""))
    #expect(try expr(#""back\\slash\n\t\r\0""#) == const("back\\slash\n\t\r\0"))
    #expect(try expr(#""caf\u00e9""#) == const("café"))
    #expect(try expr(#""\ud83d\ude00""#) == const("😀"))
    #expect(try expr(#""%@ and %K""#) == const("%@ and %K"))
    #expect(try expr(#""100%%""#) == const("100%%"))
    for (text, value) in [
      ("nil", Value.null), ("NULL", .null), ("YES", true), ("true", true), ("NO", false), ("FALSE", false),
    ] {
      #expect(try expr(text) == const(value))
    }
    #expect(try expr("{1, 'a', {2.5, nil}}") == const([1, "a", [2.5, .null]]))
    #expect(try expr("{}") == const([]))
  }

  @Test func arithmeticAndFunctions() throws {
    let a = key("a")
    let b = key("b")
    #expect(try expr("a + b * 2") == .function("add:to:", [a, .function("multiply:by:", [b, const(2)])]))
    #expect(try expr("a - b - 1") == .function("from:subtract:", [.function("from:subtract:", [a, b]), const(1)]))
    #expect(
      try expr("a / b ** 2 ** 3")
        == .function(
          "divide:by:", [a, .function("raise:toPower:", [b, .function("raise:toPower:", [const(2), const(3)])])]))
    #expect(try expr("-2 ** 2") == .function("raise:toPower:", [const(-2), const(2)]))
    #expect(try expr("-a") == .function("from:subtract:", [const(0), a]))
    #expect(try expr("(a + b) * -1") == .function("multiply:by:", [.function("add:to:", [a, b]), const(-1)]))
    #expect(try expr("specialCount + %d", 1) == .function("add:to:", [key("specialCount"), const(1)]))
    #expect(try expr("now()") == .function("now", []))
    #expect(try expr("random()") == .function("random", []))
    #expect(try expr("lowercase:(title)") == .function("lowercase:", [key("title")]))
    #expect(try expr("UPPERCASE:(title)") == .function("uppercase:", [key("title")]))
    #expect(try expr("canonical:(title)") == .function("canonical:", [key("title")]))
    for name in ["abs:", "sqrt:", "log:", "ln:", "exp:", "floor:", "ceiling:", "trunc:"] {
      #expect(try expr("\(name)(x)") == .function(name, [key("x")]))
    }
    for name in ["sum:", "count:", "min:", "max:", "average:", "median:", "mode:", "stddev:"] {
      #expect(try expr("\(name)(items.price)") == .function(name, [key("items.price")]))
      #expect(try expr("\(name)(1, 2, 3)") == .function(name, [const([1, 2, 3])]))
      #expect(try expr("\(name)({a, 2})") == .function(name, [.aggregate([a, const(2)])]))
    }
    #expect(try expr("add:to:(1, a)") == .function("add:to:", [const(1), a]))
    #expect(try expr("{1, 2}.@count") == .function("count:", [const([1, 2])]))
    #expect(try expr("%@.@sum", [1, 2]) == .function("sum:", [const([1, 2])]))
    #expect(
      try parse("now() - 86400 > date")
        == cmp(
          .function("from:subtract:", [.function("now", []), const(86400)]), .greaterThan, key("date")))
  }

  @Test func casts() throws {
    let date = Date(timeIntervalSinceReferenceDate: 123.5)
    #expect(try expr("CAST(123.5, 'NSDate')") == const(.date(date)))
    #expect(try expr("CAST(-10, \"NSDate\")") == const(.date(Date(timeIntervalSinceReferenceDate: -10))))
    #expect(try expr("CAST(%@, 'NSDate')", date) == const(.date(date)))
    #expect(try expr("CAST(stamp, 'NSDate')") == .function("castObject:toType:", [key("stamp"), const("NSDate")]))
    let newYear = Date(timeIntervalSince1970: 1_704_067_200)
    #expect(try expr("CAST('2024-01-01T00:00:00Z', 'NSDate')") == const(.date(newYear)))
    #expect(try expr("CAST('2024-01-01T02:00:00+02:00', 'NSDate')") == const(.date(newYear)))
    #expect(try expr("CAST('2024-01-01T00:00:00.250Z', 'NSDate')") == const(.date(newYear.addingTimeInterval(0.25))))
    #expect(try expr("CAST('2024-01-01', 'NSDate')") == const(.date(newYear)))
    #expect(throws: (any Error).self) { try expr("CAST('2024-13-45', 'NSDate')") }
    #expect(try expr("CAST('1.25', 'NSDecimalNumber')") == const(.decimal(Decimal(string: "1.25")!)))
    #expect(try expr("CAST('7', 'NSNumber')") == const(7))
    #expect(try expr("CAST('inf', 'NSNumber')") == const(.double(.infinity)))
    #expect(try expr("CAST(7, 'NSString')") == const("7"))
    let uuid = UUID()
    #expect(try expr("CAST('\(uuid.uuidString)', 'UUID')") == const(.uuid(uuid)))
    #expect(try expr("CAST('https://x.org/a?b=1', 'NSURL')") == const(.url(URL(string: "https://x.org/a?b=1")!)))
    #expect(try expr("CAST('00ff10', 'NSData')") == const(.data(Data([0, 255, 16]))))
    let id = ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 12)
    #expect(try expr("CAST('strata://S1/Movie/p12', 'ObjectID')") == const(.objectID(id)))
    #expect(try expr("CAST(nil, 'NSDate')") == const(.null))
  }

  @Test func everyArgumentType() throws {
    let date = Date(timeIntervalSince1970: 1_000_000)
    let uuid = UUID()
    let url = URL(string: "https://example.org")!
    let id = ObjectID(entityName: "Movie", storeIdentifier: "S", primaryKey: 3)
    let optional: Int? = nil
    let table: [(any PredicateArgument, Value)] = [
      ("s", "s"), ("sub"[...], "sub"), (Int(1), 1), (Int8(-2), -2), (Int16(3), 3), (Int32(4), 4), (Int64(5), 5),
      (UInt8(6), 6), (UInt16(7), 7), (UInt32(8), 8), (1.5, 1.5), (Float(0.5), 0.5), (Decimal(2), .decimal(2)),
      (true, true), (date, .date(date)), (uuid, .uuid(uuid)), (Data([1, 2]), .data(Data([1, 2]))), (url, .url(url)),
      (id, .objectID(id)), (Value.null, .null), (optional, .null), (Int?.some(9), 9), ([1, 2], [1, 2]),
      (Set([3]), [3]), (1...2, [1, 2]), ([["a"], ["b", "c"]], [["a"], ["b", "c"]]),
    ]
    for (argument, value) in table {
      #expect(try parse("x == %@", argument) == cmp(key("x"), .equalTo, const(value)), "\(value)")
    }
    #expect(
      try parse("x == %d AND y == %i AND z == %ld AND w == %lld AND v == %u", 1, 2, 3, true, 5).description
        == "x == 1 AND y == 2 AND z == 3 AND w == 1 AND v == 5")
    #expect(try parse("x == %f AND y == %lf", 1, 2.5).description == "x == 1.0 AND y == 2.5")
    #expect(try parse("%K == %@ AND y == 1", "title", "Heat").description == "title == \"Heat\" AND y == 1")
    let args: [any PredicateArgument] = ["title", "Heat"]
    #expect(try QueryPredicate(format: "%K == %@", argumentArray: args) == cmp(key("title"), .equalTo, const("Heat")))
  }

  @Test func canonicalDescriptions() throws {
    let table: [(String, String)] = [
      ("a = 1 && b <> 'x' || !c => 2", "(a == 1 AND b != \"x\") OR NOT c >= 2"),
      ("SOME tags.name ==[c] 'x'", "ANY tags.name ==[c] \"x\""),
      ("#in == NULL", "#in == nil"),
      ("a IN {1, 'b', YES}", "a IN {1, \"b\", YES}"),
      ("x == 0x10 + (2 - 1) * 3", "x == 16 + (2 - 1) * 3"),
      ("x == (a - b) - (c - d)", "x == a - b - (c - d)"),
      ("x == 2 ** (3 ** 2) AND y == (2 ** 3) ** 2", "x == 2 ** 3 ** 2 AND y == (2 ** 3) ** 2"),
      ("d > CAST(0, 'NSDate')", "d > CAST(0.0, \"NSDate\")"),
      ("TRUEPREDICATE AND NOT FALSEPREDICATE", "TRUEPREDICATE AND NOT FALSEPREDICATE"),
      ("lowercase:(t) BEGINSWITH 'a'", "lowercase:(t) BEGINSWITH \"a\""),
    ]
    for (input, canonical) in table {
      #expect(try parse(input).description == canonical)
    }
    #expect(QueryPredicate.and([]).description == "TRUEPREDICATE")
    #expect(QueryPredicate.or([]).description == "FALSEPREDICATE")
  }

  @Test func rejectedConstructsNameThePosition() throws {
    let table: [(String, Int, String)] = [
      ("items[FIRST == 1", 12, "expected ']'"),
      ("items[SIZE].name == 1", 12, "a key cannot follow [SIZE]"),
      ("FUNCTION(SELF, 'foo') == 1", 0, "FUNCTION"),
      ("frobnicate:(x) == 1", 0, "unknown function 'frobnicate:'"),
      ("foo() == 1", 0, "unknown function 'foo'"),
      ("@count == 1", 0, "collection operator"),
      ("items.@distinctUnionOfObjects.x == 1", 6, "unknown collection operator"),
      ("items.@count.x == 1", 13, "@count must end"),
      ("a.@sum.b.@max == 1", 9, "only one collection operator"),
      ("lowercase:(a, b) == 1", 0, "lowercase: takes 1 argument, found 2"),
      ("now(1) == 1", 0, "now takes 0 arguments, found 1"),
      ("CAST(1, 'Banana') == 1", 8, "unknown CAST type"),
      ("CAST('zz', 'UUID') == 1", 5, "cannot CAST string \"zz\" to UUID"),
      ("lowercase:(x).name == 1", 14, "a key can only follow"),
    ]
    for (format, position, fragment) in table {
      expectParseFailure(format, at: position, containing: fragment)
    }
  }
}

/// Checks that parsing fails with `.invalidQuery` and a message naming `position` and `fragment`.
func expectParseFailure(
  _ format: String, _ arguments: [any PredicateArgument] = [], at position: Int, containing fragment: String,
  expression: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
) {
  do {
    if expression {
      let e = try QueryExpression(format: format, argumentArray: arguments)
      Issue.record("\(format) parsed as \(e)", sourceLocation: sourceLocation)
    } else {
      let p = try QueryPredicate(format: format, argumentArray: arguments)
      Issue.record("\(format) parsed as \(p)", sourceLocation: sourceLocation)
    }
  } catch let error as StoreError {
    #expect(error.code == .invalidQuery, sourceLocation: sourceLocation)
    #expect(error.message.contains("at position \(position)"), "\(error.message)", sourceLocation: sourceLocation)
    #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    #expect(!error.message.contains("\n"), sourceLocation: sourceLocation)
  } catch {
    Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
  }
}
