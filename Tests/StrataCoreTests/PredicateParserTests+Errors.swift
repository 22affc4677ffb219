import Foundation
import Testing

@testable import StrataCore

extension PredicateParserTests {
  @Test func errorMessageShape() throws {
    do {
      _ = try QueryPredicate(format: "title ==")
      Issue.record("parsed")
    } catch let error as StoreError {
      #expect(error.message == "predicate \"title ==\": expected an expression at position 8, found end of input")
    }
    do {
      _ = try QueryExpression(format: "a b")
      Issue.record("parsed")
    } catch let error as StoreError {
      #expect(error.message == "expression \"a b\": expected an operator or end of input at position 2, found 'b'")
    }
  }

  @Test func syntaxErrorsNameThePosition() {
    let table: [(String, Int, String)] = [
      ("", 0, "expected an expression at position 0, found end of input"),
      ("title ==", 8, "found end of input"),
      ("title == 'abc", 9, "unterminated string starting at position 9"),
      ("title == \"abc\\", 9, "unterminated string"),
      ("(a == 1", 7, "expected ')' at position 7 (to close the '(' at position 0), found end of input"),
      ("((a == 1) OR (b == 2)", 21, "to close the '(' at position 0"),
      ("a == 1)", 6, "unbalanced ')'"),
      ("a == (1 + 2", 11, "expected ')'"),
      ("a IN {1, 2", 10, "expected ',' or '}'"),
      ("a ~ 1", 2, "unexpected character '~'"),
      ("a & b", 2, "did you mean '&&'"),
      ("a | b", 2, "did you mean '||'"),
      ("a === 1", 4, "expected an expression"),
      ("a <=> 1", 4, "expected an expression"),
      ("a", 1, "expected a comparison operator"),
      ("ANY a", 5, "expected a comparison operator"),
      ("a + 1", 5, "expected a comparison operator"),
      ("a OR b == 1", 2, "expected a comparison operator"),
      ("a == 1 b == 2", 7, "expected AND, OR or end of input at position 7, found 'b'"),
      ("a == 1 AND", 10, "expected an expression"),
      ("NOT", 3, "expected an expression"),
      ("a == AND", 5, "found 'AND'"),
      ("a ==[x] 1", 5, "unknown option 'x' in [x] (expected c, d or n)"),
      ("a CONTAINS[cz] 'q'", 11, "unknown option 'z'"),
      ("a ==[] 1", 5, "expected option letters"),
      ("a ==[c 1", 7, "expected ']'"),
      ("a BETWEEN {1, 2, 3}", 10, "BETWEEN needs two bounds"),
      ("a BETWEEN 5", 10, "BETWEEN needs two bounds"),
      ("a IN 5", 5, "IN needs a collection or a string at position 5, found integer 5"),
      ("a == 'b\\q'", 7, "unknown escape '\\q'"),
      ("a == \"\\u12\"", 6, "expected 4 hex digits"),
      ("a == '\\udc00'", 6, "lone surrogate"),
      ("a == 99999999999999999999", 5, "out of range"),
      ("a == -9223372036854775809", 6, "out of range"),
      ("a == 1e999", 5, "out of range"),
      ("a == 0x", 5, "expected digits after '0x'"),
      ("a == 12abc", 5, "invalid number"),
      ("a == $", 5, "expected a variable name after '$'"),
      ("# == 1", 0, "expected a key after '#'"),
      ("a.@ == 1", 2, "expected a collection operator after '@'"),
      ("a. == 1", 3, "expected a key after '.'"),
      ("SUBQUERY(items, x, x == 1).@count > 0", 16, "expected a $variable"),
      ("SUBQUERY(items $x, $x == 1).@count > 0", 15, "expected ','"),
      ("SUBQUERY(items, $x, $x).@count > 0", 22, "expected a comparison operator"),
      ("SUBQUERY items == 1", 9, "expected '(' after SUBQUERY"),
      ("CAST(1) == 1", 6, "expected ','"),
      ("CAST(1, 2) == 1", 8, "expected a type name string"),
      ("a == %%", 5, "a literal percent sign"),
      ("a == %x", 5, "unknown format specifier '%x'"),
      ("a == %lx", 5, "unknown format specifier '%lx'"),
      ("a == %", 5, "incomplete format specifier"),
      ("a == \u{7}", 5, "unexpected character U+0007"),
    ]
    for (format, position, fragment) in table {
      expectParseFailure(format, at: position, containing: fragment)
    }
    expectParseFailure("a +", at: 3, containing: "expected an expression", expression: true)
    expectParseFailure("a == 1", at: 2, containing: "expected an operator or end of input", expression: true)
    expectParseFailure("(a", at: 2, containing: "expected ')'", expression: true)
  }

  @Test func argumentErrorsNameThePosition() {
    let table: [(String, [any PredicateArgument], Int, String)] = [
      ("a == %@", [], 5, "missing argument 1 for '%@' at position 5 (0 arguments given)"),
      ("a == %@ AND b == %@", [1], 17, "missing argument 2"),
      ("a == %@", [1, 2], 7, "too many arguments at position 7 (end of input: 2 arguments given, the format uses 1)"),
      ("a == '%@'", [1], 9, "too many arguments"),
      ("a == %d", ["x"], 5, "argument 1 for '%d' must be an integer at position 5, found string \"x\""),
      ("a == %i", [1.5], 5, "must be an integer"),
      ("a == %f", ["x"], 5, "must be a number"),
      ("%K == 1", [5], 0, "argument 1 for '%K' must be a key path string at position 0, found integer 5"),
      ("%K == 1", ["a b"], 0, "is not a key path"),
      ("%K == 1", ["a..b"], 0, "is not a key path"),
      ("%K == 1", [""], 0, "is not a key path"),
      ("%K == 1", ["@count"], 0, "must follow a to-many key path"),
      ("a BETWEEN %@", [[1, 2, 3]], 10, "BETWEEN needs two bounds"),
      ("a BETWEEN %@", [1], 10, "BETWEEN needs two bounds"),
      ("a IN %@", [Value.null], 5, "IN needs a collection"),
    ]
    for (format, arguments, position, fragment) in table {
      expectParseFailure(format, arguments, at: position, containing: fragment)
    }
  }

  @Test func nestingIsCapped() {
    let n = QueryLimits.maxDepth
    let deep = String(repeating: "(", count: 300) + "a == 1" + String(repeating: ")", count: 300)
    expectParseFailure(deep, at: n, containing: "the predicate nests deeper than \(n) levels")
    expectParseFailure(String(repeating: "NOT ", count: 300) + "a == 1", at: 4 * n, containing: "nests deeper")
    expectParseFailure("a == " + String(repeating: "-", count: 300) + "b", at: 5 + n, containing: "nests deeper")
    expectParseFailure("a == " + String(repeating: "{", count: 300), at: 5 + n, containing: "nests deeper")
    expectParseFailure("a == " + String(repeating: "abs:(", count: 300), at: 5 + 5 * n + 4, containing: "nests deeper")
    let chain = "a == 1" + String(repeating: " + 1", count: 300)
    expectParseFailure(chain, at: 6 + 4 * n + 1, containing: "nests deeper than \(n) levels")
    let sub = String(repeating: "SUBQUERY(x, $x, ", count: 300)
    expectParseFailure(sub, at: n * 16, containing: "nests deeper")
    let long = String(repeating: "(", count: 10_000)
    expectParseFailure(long, at: n, containing: "(…\": the predicate nests deeper")
    let counts = "SELF" + String(repeating: ".@count", count: 10_000) + " == 1"
    expectParseFailure(counts, at: 4 + 7 * (n + 1), containing: "nests deeper")
    let keys = "a" + String(repeating: ".b", count: 40_000) + " == 1"
    expectParseFailure(
      keys, at: 1 + 2 * QueryLimits.maxKeyPathComponents - 1,
      containing: "more than \(QueryLimits.maxKeyPathComponents) components")
  }

  @Test func treesPastTheLimitsAreRefused() {
    var deep = QueryExpression.evaluatedObject
    for _ in 0..<1_000 { deep = .function("count:", [deep]) }
    let error = #expect(throws: StoreError.self) { try QueryLimits.check(.comparison(Comparison(deep, .equalTo, .constant(1)))) }
    #expect(error?.code == .invalidQuery)
    #expect(error?.message.contains("nests deeper than \(QueryLimits.maxDepth) levels") == true)
    var nots = QueryPredicate.true
    for _ in 0..<1_000 { nots = .not(nots) }
    #expect(throws: StoreError.self) { try QueryLimits.check(nots) }
    let path = Array(repeating: "sequel", count: QueryLimits.maxKeyPathComponents + 1).joined(separator: ".")
    #expect(throws: StoreError.self) { try QueryLimits.checkKeyPath(path) }
    #expect(throws: Never.self) {
      try QueryLimits.checkKeyPath(Array(repeating: "sequel", count: QueryLimits.maxKeyPathComponents).joined(separator: "."))
    }
    let wide = QueryPredicate.and(Array(repeating: .comparison(Comparison(.keyPath("a"), .equalTo, .constant(1))), count: 10_000))
    #expect(throws: Never.self) { try QueryLimits.check(wide) }
  }

  @Test func nestingUpToTheCapParses() throws {
    let n = QueryLimits.maxDepth
    let parens = String(repeating: "(", count: n - 1) + "a == 1" + String(repeating: ")", count: n - 1)
    #expect(try QueryPredicate(format: parens) == .comparison(Comparison(.keyPath("a"), .equalTo, .constant(1))))
    let inner = String(repeating: "(", count: n - 5) + "1" + String(repeating: ")", count: n - 5)
    #expect(try QueryPredicate(format: "a == " + inner).description == "a == 1")
    let nots = try QueryPredicate(format: String(repeating: "NOT ", count: n - 2) + "a == 1")
    #expect(try QueryPredicate(format: nots.description) == nots)
    let chain = try QueryPredicate(format: "a == 1" + String(repeating: " + 1", count: n - 2))
    #expect(try QueryPredicate(format: chain.description) == chain)
    let subqueries = try QueryPredicate(
      format: "a == " + String(repeating: "SUBQUERY(x, $x, a == ", count: n / 2 - 1) + "1"
        + String(repeating: ")", count: n / 2 - 1))
    #expect(try QueryPredicate(format: subqueries.description) == subqueries)
    let wide = try QueryPredicate(format: Array(repeating: "a == 1", count: 5_000).joined(separator: " OR "))
    #expect(try QueryPredicate(format: wide.description) == wide)
  }
}
