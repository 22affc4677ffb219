import Foundation
import StrataTestSupport
import Testing

@testable import StrataCore

extension PredicateParserTests {
  /// 100,000 random and mutated strings (`STRATA_FUZZ_ITERATIONS` to change, as the sanitizer runs do):
  /// each must give a predicate or a `.invalidQuery` error naming a position, never a crash or a hang;
  /// every predicate that parses must round-trip through `description`.
  @Test func randomAndMutatedInputs() {
    var rng = SplitMix64(seed: 2001)
    let fragments = [
      "(", ")", "{", "}", "[c]", "[cd]", "[", "]", ",", ".", ":", "==", "=", "!=", "<>", "<", "<=", "=>", ">",
      "AND", "OR", "NOT", "&&", "||", "!", "ANY", "ALL", "NONE", "SOME", "IN", "BETWEEN", "CONTAINS", "LIKE",
      "MATCHES", "BEGINSWITH", "%@", "%K", "%d", "%f", "%%", "%x", "%", "$x", "$", "@count", "@sum", "@", "#", "#in",
      "SELF", "nil", "YES", "TRUEPREDICATE", "SUBQUERY(", "CAST(", "'NSDate'", "lowercase:(", "sum:(", "now()",
      "FUNCTION(", "title", "a.b", "-", "+", "*", "/", "**", "1", "-1", "0x1F", "0x", "1e", "1.5e-3", ".5",
      "99999999999999999999", "'", "\"", "\\", "\\u00e9", "\\ud83d", " ", "\n", "\t", "é", "\u{301}", "😀", "\u{0}",
      "ß", "İ",
    ]
    let scalarPool: [Unicode.Scalar] = Array(
      "()[]{}<>=!&|+-*/%@#$.,:'\"\\ aZ09_é\u{301}\u{0}\u{7f}\u{2028}".unicodeScalars)
    var parsed = 0
    var failures: [String] = []

    func check(_ input: String) {
      let arguments = PredicateParserTests.fuzzArguments(for: input)
      do {
        let predicate = try QueryPredicate(format: input, argumentArray: arguments)
        parsed += 1
        let text = predicate.description
        do {
          let again = try QueryPredicate(format: text)
          if again != predicate { failures.append("round trip of \(input.debugDescription) → \(text)") }
        } catch {
          failures.append("reparse of \(input.debugDescription) → \(text): \(error)")
        }
      } catch let error as StoreError {
        let message = error.message
        if error.code != .invalidQuery || message.firstRange(of: " at position ") == nil
          || message.contains(where: \.isNewline)
        {
          failures.append("bad error for \(input.debugDescription): \(error.message)")
        }
      } catch {
        failures.append("unexpected error for \(input.debugDescription): \(error)")
      }
    }

    func mutate(_ input: String) -> String {
      var scalars = Array(input.unicodeScalars)
      for _ in 0..<Int.random(in: 1...4, using: &rng) {
        let at = scalars.isEmpty ? 0 : Int.random(in: 0...scalars.count, using: &rng)
        switch Int.random(in: 0..<6, using: &rng) {
        case 0 where !scalars.isEmpty:
          let end = min(scalars.count, at + Int.random(in: 1...4, using: &rng))
          if at < end { scalars.removeSubrange(at..<end) }
        case 1: scalars.insert(contentsOf: fragments.randomElement(using: &rng)!.unicodeScalars, at: at)
        case 2: scalars.insert(scalarPool.randomElement(using: &rng)!, at: at)
        case 3: scalars = Array(scalars.prefix(at))
        case 4 where at < scalars.count:
          scalars[at] = scalarPool.randomElement(using: &rng)!
        default:
          let from = Int.random(in: 0...max(0, scalars.count - 1), using: &rng)
          let slice = scalars[from..<min(scalars.count, from + Int.random(in: 1...12, using: &rng))]
          scalars.insert(contentsOf: slice, at: min(at, scalars.count))
        }
      }
      var view = String.UnicodeScalarView()
      view.append(contentsOf: scalars)
      return String(view)
    }

    let deep = [
      String(repeating: "(", count: 10_000), String(repeating: ")", count: 10_000),
      String(repeating: "NOT ", count: 10_000) + "a == 1", "a == " + String(repeating: "-", count: 10_000) + "1",
      "a == " + String(repeating: "{", count: 10_000), "a == " + String(repeating: "abs:(", count: 5_000),
      "a == 1" + String(repeating: " ** 1", count: 10_000), String(repeating: "SUBQUERY(x, $x, ", count: 3_000),
      String(repeating: "(a == 1 AND ", count: 5_000), String(repeating: "a == 1 OR ", count: 5_000) + "b == 2",
      "a IN {" + Array(repeating: "1", count: 20_000).joined(separator: ", ") + "}",
      "a == '" + String(repeating: "\\\\", count: 20_000) + "'", String(repeating: "a.", count: 10_000) + "b == 1",
    ]
    for input in deep { check(input) }

    let total = ProcessInfo.processInfo.environment["STRATA_FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? 100_000
    for i in 0..<max(0, total - deep.count) {
      switch i % 4 {
      case 0:
        check(
          (0..<Int.random(in: 1...24, using: &rng)).map { _ in fragments.randomElement(using: &rng)! }
            .joined(separator: Bool.random(using: &rng) ? " " : ""))
      default:
        check(mutate(predicateSampleFormats.randomElement(using: &rng)!))
      }
    }
    #expect(failures.isEmpty, "\(failures.count) failures, first: \(failures.prefix(5).joined(separator: "\n"))")
    #expect(parsed > total / 20, "only \(parsed) inputs parsed; the mutations are too destructive to test much")
  }

  /// Arguments matching the specifiers outside quotes, so that mutated inputs reach the parser.
  static func fuzzArguments(for input: String) -> [any PredicateArgument] {
    var arguments: [any PredicateArgument] = []
    for specifier in formatSpecifiers(in: input) {
      switch specifier {
      case "@": arguments.append(arguments.count % 3 == 0 ? Value.array([1, 2]) : Value.string("x"))
      case "K": arguments.append("title")
      case "d": arguments.append(7)
      case "f": arguments.append(2.5)
      default: break
      }
    }
    return arguments
  }
}
