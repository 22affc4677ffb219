import Foundation
import StrataCore
import Testing

/// `MATCHES` under ``QueryLimits/maxMatchSteps`` and ``QueryLimits/maxPatternLength`` (issue 25, item 4:
/// `MATCHES '(a+)+b'` backtracked for seconds per row, and longer strings for ever).
@Suite struct MatchesLimitTests {
  private func matchError(_ value: String, _ pattern: String, _ options: StringOptions = []) -> StoreError? {
    do {
      _ = try StringSemantics.matches(value, pattern, options)
      return nil
    } catch {
      return error as? StoreError
    }
  }

  @Test func catastrophicBacktrackingStopsWithAClearError() {
    let subject = String(repeating: "a", count: 30) + "!"
    for (pattern, options) in [("(a+)+$", StringOptions()), ("(a+)+b", []), ("(a|aa)+b", []), ("(A+)+B", .caseInsensitive)] {
      let error = matchError(subject, pattern, options)
      #expect(error?.code == .invalidQuery, "\(pattern)")
      #expect(
        error?.message == "MATCHES pattern '\(pattern)' exceeded its limit of 1000000 matching steps on one string "
          + "(it backtracks too much: avoid nested repetition such as (a+)+)")
    }
    // Without the limit the first of these alone runs for minutes: the error, not a timer, is the proof.
  }

  @Test func ordinaryPatternsOnLongStringsStillMatch() throws {
    let long = String(repeating: "ab", count: 50_000)
    #expect(try StringSemantics.matches(long, "(ab)+", []))
    #expect(try StringSemantics.matches(long, ".*ba.*", []))
    #expect(try !StringSemantics.matches(long, ".*c.*", []))
    #expect(try StringSemantics.matches("aaaaaaaaaa!", "(a+)+!", []))
    #expect(try !StringSemantics.matches("aaaaaaaaaa!", "(a+)+$", []))
  }

  @Test func patternLengthIsLimited() throws {
    let atLimit = String(repeating: "a?", count: QueryLimits.maxPatternLength / 2)
    #expect(try StringSemantics.matches("aaa", atLimit, []))
    let error = matchError("aaa", atLimit + "a")
    #expect(error?.code == .invalidQuery)
    #expect(error?.message.contains("longer than \(QueryLimits.maxPatternLength) UTF-16 code units") == true)
  }

  @Test func backtrackingMemoryExhaustionIsAnErrorNotAWrongAnswer() {
    // ICU gives up (U_REGEX_STACK_OVERFLOW) before the step limit; that used to read as "no match".
    let error = matchError(String(repeating: "a", count: 1_000_000), "(?:a|b)*")
    #expect(error?.code == .invalidQuery)
    #expect(error?.message.contains("could not be evaluated") == true, "\(error?.message ?? "")")
  }

  @Test func theValidatorAppliesTheLengthLimitToConstantPatterns() throws {
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])
    let entity = try model.requireEntity("Note")
    let predicate = try QueryPredicate(format: "text MATCHES %@", String(repeating: "x", count: QueryLimits.maxPatternLength + 1))
    #expect(throws: StoreError.self) { try QueryValidator.check(predicate, entity: entity, model: model) }
  }
}
