import Foundation
import StrataStoreKit
import StrataTestSupport
import Testing

@testable import StrataCore

/// The fuzz tests' settings, from the environment so that `scripts/torture fuzz N` runs the same tests
/// longer: `STRATA_FUZZ_ITERATIONS` (inputs per fuzzer), `STRATA_FUZZ_SEED` (the first seed; a failure
/// prints the seed that reproduces it) and `STRATA_FUZZ_INPUT_FILE` (where the input being tried is
/// written before it is tried, so that a crash leaves it behind).
enum FuzzSettings {
  static func iterations(default value: Int) -> Int {
    ProcessInfo.processInfo.environment["STRATA_FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? value
  }

  static func seed(default value: UInt64) -> UInt64 {
    ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"].flatMap { UInt64($0) } ?? value
  }

  static let inputFile = ProcessInfo.processInfo.environment["STRATA_FUZZ_INPUT_FILE"]

  /// Leaves `input` where a crash report can find it (only when `STRATA_FUZZ_INPUT_FILE` is set).
  static func record(_ input: String) {
    guard let inputFile else { return }
    _ = FileManager.default.createFile(atPath: inputFile, contents: Data(input.utf8))
  }
}

/// What one fuzz run tried and what became of it; `summary` is the line `scripts/torture fuzz` reads.
struct PredicateFuzzReport: Sendable {
  var seed: UInt64 = 0
  var inputs = 0
  var parsed = 0
  var validated = 0
  var evaluated = 0
  var rejected = 0
  var unsupported = 0
  var matchLimit = 0
  var slowest: Duration = .zero
  var slowestInput = ""
  var failures: [String] = []
  var elapsed: Duration = .zero

  var summary: String {
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return "fuzz-summary predicates seed=\(seed) inputs=\(inputs) parsed=\(parsed) validated=\(validated) "
      + "evaluated=\(evaluated) invalidQuery=\(rejected) unsupported=\(unsupported) matchLimit=\(matchLimit) "
      + "failures=\(failures.count) seconds=\(String(format: "%.1f", seconds))"
  }
}

/// Fuzzes the predicate parser, validator and evaluator together (issue 25, "the campaign lives in the
/// project"): random bytes, random tokens, predicates generated from the grammar over a model, mutations
/// of those, and every input issue 25 item 4 names (NaN, infinities, integer overflow literals, deep
/// nesting, long key-path chains, huge `IN` lists, `MATCHES` patterns that backtrack). Each input must
/// parse or fail with `.invalidQuery`; what parses must validate or fail with `.invalidQuery` or
/// `.unsupported`; what validates is evaluated against every snapshot of a small graph (NaN, infinite and
/// extreme values included) and must answer or fail with one of those two codes. Never a crash, a hang or
/// another error. The run happens on a 512 KB stack, as the depth limit promises.
@Suite struct QueryFuzzTests {
  @Test func parserValidatorAndEvaluator() async {
    let iterations = FuzzSettings.iterations(default: 3_000)
    let seed = FuzzSettings.seed(default: 0x5EED_2025)
    print("fuzz predicates: seed \(seed), \(iterations) inputs (STRATA_FUZZ_SEED=\(seed) repeats the run)")
    let report = await withCheckedContinuation { continuation in
      let thread = Thread { continuation.resume(returning: PredicateFuzzer.run(seed: seed, iterations: iterations)) }
      thread.stackSize = 512 * 1024
      thread.start()
    }
    print(report.summary)
    print("fuzz predicates: slowest input took \(report.slowest): \(report.slowestInput.prefix(160).debugDescription)")
    #expect(
      report.failures.isEmpty,
      "seed \(seed): \(report.failures.count) failures, first: \(report.failures.prefix(5).joined(separator: "\n"))")
    #expect(report.parsed > report.inputs / 5, "only \(report.parsed) of \(report.inputs) inputs parsed")
    #expect(report.evaluated > report.inputs / 10, "only \(report.evaluated) of \(report.inputs) inputs evaluated")
    // Work is bounded by counted limits (depth, steps of MATCHES), not by time: the slowest input is printed
    // above for a person to read, never asserted (a loaded or sanitized machine runs many times slower).
  }

  /// The inputs issue 25 item 4 names, each with its expected fate, so that a regression names itself.
  @Test func issue25Inputs() throws {
    let graph = try FuzzGraph()
    func outcome(_ format: String, _ arguments: [Value] = []) -> String {
      do {
        let predicate = try QueryPredicate(format: format, argumentArray: arguments)
        let evaluator = try PredicateEvaluator(predicate, entity: graph.movie, model: graph.model)
        return "\(try evaluator.filter(graph.movies, source: graph).count) rows"
      } catch let error as StoreError {
        return "\(error.code)"
      } catch {
        return "\(error)"
      }
    }
    #expect(outcome("budget == %@", [.double(.infinity)]) == "0 rows")
    #expect(outcome("budget == CAST('inf', 'NSNumber')") == "0 rows")
    #expect(outcome("budget BETWEEN {CAST('-inf', 'NSNumber'), CAST('inf', 'NSNumber')}") == "3 rows")
    #expect(outcome("budget < 1e200") == "3 rows")
    #expect(outcome("SELF" + String(repeating: ".@count", count: 2_000) + " == 1") == "invalidQuery")
    #expect(outcome("SELF" + String(repeating: ".@sum", count: 10_000) + " == 1") == "invalidQuery")
    #expect(outcome("ANY " + String(repeating: "tags.movies.", count: 50) + "title == 'x'") == "invalidQuery")
    #expect(outcome(Array(repeating: "sequel", count: 40_000).joined(separator: ".") + ".title == 'x'") == "invalidQuery")
    #expect(outcome("title MATCHES '(a+)+b'") == "invalidQuery")
    #expect(outcome("released < %@", [.date(Date(timeIntervalSinceReferenceDate: .nan))]) == "0 rows")
    #expect(outcome("abs:(gross) > 0") == "3 rows")  // abs: of the smallest integer is its magnitude, as a double
    #expect(outcome("{1} == {2}") == "0 rows")
    #expect(outcome("year IN %@", [.array((0..<9_999).map { .int($0) })]) == "3 rows")
    #expect(outcome("year IN %@", [.array((0..<10_001).map { .int($0) })]) == "invalidQuery")
  }
}

/// A small graph for the evaluator: movies with extreme values (NaN, infinities, the smallest integer, a
/// long title), a cycle of sequels, tags (many-to-many) and directors.
struct FuzzGraph: EvaluationSource {
  let model: ObjectModel
  var objects: [ObjectID: Snapshot] = [:]
  var toMany: [ObjectID: [String: [ObjectID]]] = [:]
  var movies: [Snapshot] = []

  func snapshot(for id: ObjectID) throws -> Snapshot? { objects[id] }
  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    toMany[id]?[relationship.name] ?? []
  }

  let movie: EntityDescription
  let director: EntityDescription

  static func id(_ entity: String, _ pk: Int64) -> ObjectID {
    ObjectID(entityName: entity, storeIdentifier: "F", primaryKey: pk)
  }

  init() throws {
    model = try ObjectModel(entities: [
      EntityDescription(
        name: "Director",
        attributes: [
          AttributeDescription(name: "name", type: .string),
          AttributeDescription(name: "born", type: .date, isOptional: true),
        ],
        relationships: [
          RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)
        ]),
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "year", type: .int16),
          AttributeDescription(name: "gross", type: .int64, isOptional: true),
          AttributeDescription(name: "rating", type: .double, isOptional: true),
          AttributeDescription(name: "score", type: .float, isOptional: true),
          AttributeDescription(name: "budget", type: .decimal, isOptional: true),
          AttributeDescription(name: "watched", type: .bool),
          AttributeDescription(name: "released", type: .date, isOptional: true),
          AttributeDescription(name: "code", type: .uuid, isOptional: true),
          AttributeDescription(name: "site", type: .url, isOptional: true),
          AttributeDescription(name: "poster", type: .data, isOptional: true),
          AttributeDescription(name: "note", type: .string, isOptional: true, isTransient: true),
        ],
        relationships: [
          RelationshipDescription(name: "director", destination: "Director", inverse: "movies"),
          RelationshipDescription(name: "sequel", destination: "Movie", inverse: "prequel"),
          RelationshipDescription(name: "prequel", destination: "Movie", inverse: "sequel"),
          RelationshipDescription(name: "tags", destination: "Tag", inverse: "movies", isToMany: true),
        ]),
      EntityDescription(
        name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [
          RelationshipDescription(name: "movies", destination: "Movie", inverse: "tags", isToMany: true)
        ]),
    ])
    movie = try model.requireEntity("Movie")
    director = try model.requireEntity("Director")
    let id = Self.id
    func add(_ entity: String, _ pk: Int64, _ attributes: [Value], _ toOne: [ObjectID?]) {
      objects[id(entity, pk)] = Snapshot(objectID: id(entity, pk), version: 1, attributes: attributes, toOne: toOne)
    }
    add("Director", 1, ["Michael Mann", .date(Date(timeIntervalSince1970: -830_000_000))], [])
    add("Director", 2, ["Nobody", .date(Date(timeIntervalSinceReferenceDate: .nan))], [])
    let code = Value.uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))
    let site = URL(string: "https://example.org/heat").map(Value.url) ?? .null
    let rows: [[Value]] = [
      [
        "Heat", 1995, 187_000_000, 8.3, 8.25, .decimal(60_000_000), true, .date(Date(timeIntervalSinceReferenceDate: 0)), code,
        site, .data(Data([0, 1])), nil,
      ],
      [
        .string(String(repeating: "a", count: 30) + "!"), 32_767, .int(.min), .double(.nan), .double(.infinity),
        .decimal(Decimal(string: "1e120") ?? 0), false, .date(Date(timeIntervalSinceReferenceDate: .nan)), nil, nil, nil, nil,
      ],
      [
        "Café Société", -32_768, .int(.max), .double(-.infinity), .double(-.greatestFiniteMagnitude),
        .decimal(Decimal(string: "-0.000001") ?? 0), true, .date(Date(timeIntervalSinceReferenceDate: .infinity)), nil, nil,
        .data(Data()), nil,
      ],
      ["", 0, nil, nil, nil, nil, false, nil, nil, nil, nil, nil],
      [
        .string(String(repeating: "ab", count: 2_000)), 2001, 0, 0.0, -0.0, .decimal(.nan), false,
        .date(Date(timeIntervalSinceReferenceDate: -1e300)), nil, nil, nil, nil,
      ],
    ]
    for (index, row) in rows.enumerated() {
      let pk = Int64(index + 1)
      let sequel = id("Movie", pk % Int64(rows.count) + 1)
      let prequel = id("Movie", (pk + Int64(rows.count) - 2) % Int64(rows.count) + 1)
      add("Movie", pk, row, [index < 3 ? id("Director", index == 2 ? 2 : 1) : nil, sequel, prequel])
      movies.append(objects[id("Movie", pk)] ?? Snapshot(objectID: id("Movie", pk), version: 1, attributes: row, toOne: []))
    }
    add("Tag", 1, ["crime"], [])
    add("Tag", 2, ["thrîller"], [])
    toMany[id("Director", 1)] = ["movies": [id("Movie", 1), id("Movie", 2)]]
    toMany[id("Director", 2)] = ["movies": [id("Movie", 3)]]
    for pk in Int64(1)...5 { toMany[id("Movie", pk)] = ["tags": pk == 4 ? [] : [id("Tag", 1), id("Tag", pk % 2 + 1)]] }
    toMany[id("Tag", 1)] = ["movies": [1, 2, 3, 5].map { id("Movie", $0) }]
    toMany[id("Tag", 2)] = ["movies": [1, 2, 3, 5].map { id("Movie", $0) }]
  }
}

/// The fuzzer: generates inputs from a seed and checks each (see ``QueryFuzzTests``).
enum PredicateFuzzer {
  static func run(seed: UInt64, iterations: Int) -> PredicateFuzzReport {
    var report = PredicateFuzzReport()
    report.seed = seed
    let started = ContinuousClock.now
    let graph: FuzzGraph
    do {
      graph = try FuzzGraph()
    } catch {
      report.failures.append("the fuzz graph's model is invalid: \(error)")
      return report
    }
    var rng = SplitMix64(seed: seed)
    var generator = PredicateGenerator()
    let fixed = PredicateGenerator.issue25Inputs
    for i in 0..<iterations {
      let (format, arguments): (String, [Value])
      if i < fixed.count {
        (format, arguments) = fixed[i]
      } else {
        format = generator.input(&rng)
        arguments = generator.arguments(for: format, &rng)
      }
      check(format, arguments, graph, &report)
    }
    report.elapsed = ContinuousClock.now - started
    return report
  }

  static func check(_ format: String, _ arguments: [Value], _ graph: FuzzGraph, _ report: inout PredicateFuzzReport) {
    FuzzSettings.record(format)
    report.inputs += 1
    let started = ContinuousClock.now
    defer {
      let took = ContinuousClock.now - started
      if took > report.slowest {
        report.slowest = took
        report.slowestInput = format
      }
    }
    func fail(_ stage: String, _ error: any Error) {
      guard report.failures.count < 50 else { return }
      let shown = format.count > 300 ? String(format.prefix(300)) + "…" : format
      report.failures.append("\(stage) of \(shown.debugDescription) with \(arguments.count) arguments: \(error)")
    }
    let predicate: QueryPredicate
    do {
      predicate = try QueryPredicate(format: format, argumentArray: arguments)
    } catch let error as StoreError where error.code == .invalidQuery {
      report.rejected += 1
      return
    } catch {
      return fail("parsing", error)
    }
    report.parsed += 1
    let evaluator: PredicateEvaluator
    do {
      evaluator = try PredicateEvaluator(predicate, entity: graph.movie, model: graph.model)
    } catch let error as StoreError where error.code == .invalidQuery || error.code == .unsupported {
      if error.code == .invalidQuery { report.rejected += 1 } else { report.unsupported += 1 }
      return
    } catch {
      return fail("validating", error)
    }
    report.validated += 1
    do {
      // Each snapshot on its own, so that one refused row does not hide a crash in the next.
      for snapshot in graph.movies {
        do {
          _ = try evaluator.evaluate(snapshot, source: graph)
        } catch let error as StoreError where error.code == .invalidQuery {
          if error.message.contains("exceeded its limit") { report.matchLimit += 1 }
        }
      }
      report.evaluated += 1
    } catch let error as StoreError where error.code == .unsupported {
      report.unsupported += 1
    } catch {
      fail("evaluating", error)
    }
  }
}

/// Inputs for the fuzzer: random bytes, random tokens, grammar-generated predicates over ``FuzzGraph``'s
/// model (most of them valid), mutations of those, and the shapes that push a limit.
struct PredicateGenerator {
  static let stringPaths = [
    "title", "director.name", "sequel.title", "prequel.sequel.title", "SELF.title", "lowercase:(title)",
    "uppercase:(director.name)", "canonical:(title)",
  ]
  static let numberPaths = [
    "year", "gross", "rating", "score", "budget", "tags.@count", "director.movies.@count", "sequel.year",
    "sequel.sequel.rating", "director.movies.@sum.year", "tags.movies.@max.gross", "count:(tags)",
    "SUBQUERY(tags, $t, $t.name BEGINSWITH 'c').@count", "abs:(gross)", "gross + 1", "year * year", "rating / 0",
    "gross - -9223372036854775808", "2 ** 1000", "sqrt:(rating)", "ln:(score)", "min:({year, 1})",
  ]
  static let otherPaths = [
    "released", "director.born", "watched", "code", "site", "poster", "note", "nope", "title.nope", "director",
    "sequel", "tags", "SELF", "tags.name", "tags.movies.title", "director.movies.title", "$x", "@count",
  ]
  static let numbers = [
    "0", "1", "-1", "1995", "32767", "32768", "-32769", "9223372036854775807", "-9223372036854775808",
    "9223372036854775808", "-9223372036854775809", "99999999999999999999", "0x7FFFFFFFFFFFFFFF",
    "0xFFFFFFFFFFFFFFFF", "1e200", "-1e200", "1e-320", "1.7976931348623157e309", "0.1", "-0.0", "5e-324",
    "CAST('nan', 'NSNumber')", "CAST('inf', 'NSNumber')", "CAST('-inf', 'NSNumber')", "CAST('1e400', 'NSNumber')",
    "CAST('12.50', 'NSDecimalNumber')", "CAST('1e200', 'NSDecimalNumber')", "%@", "%d", "%f", "nil", "YES",
  ]
  static let strings = [
    "'Heat'", "''", "'é'", "'e\\u0301'", "'\\u0000'", "'H*'", "'?e*'", "'😀'", "%@", "nil", "'a'", "'SS'", "'ß'",
  ]
  static let patterns = [
    "(a+)+$", "(a+)+b", "(a|aa)+!", "(.*){1,32000}!", "(.{0,30}){0,30}!", "((.*)*)*x", ".*", "(ab)+", "H.*t",
    "[", "(", "\\\\", "\\\\p{Han}+", "(?i)heat", "a{1000}{1000}", "(?=a)*", "\\\\1", "(a)\\\\1", "[\\\\w--a]",
    "(?<n>a)\\\\k<n>", "^$", "\\\\u{1F600}", "[^]", "x{2147483647}", "(a*)*b", "\\\\Q(\\\\E",
  ]
  static let dates = [
    "CAST(0, 'NSDate')", "CAST(700000000, 'NSDate')", "CAST('nan', 'NSDate')", "CAST(1e300, 'NSDate')",
    "CAST(-1e300, 'NSDate')", "now()", "%@",
  ]
  static let tokens: [String] =
    [
      "(", ")", "{", "}", "[c]", "[cd]", "[n]", ",", ".", ":", "==", "!=", "<", "<=", ">", ">=", "AND", "OR", "NOT",
      "&&", "||", "!", "ANY", "ALL", "NONE", "IN", "BETWEEN", "CONTAINS", "LIKE", "MATCHES", "BEGINSWITH",
      "ENDSWITH", "%@", "%K", "%d", "%f", "$x", "@count", "@sum", "@avg", "@distinctUnionOfObjects", "SELF",
      "SUBQUERY(", "CAST(", "FUNCTION(", "TRUEPREDICATE", "FALSEPREDICATE", "+", "-", "*", "/", "**", "'",
    ] + stringPaths + numberPaths + otherPaths + numbers + strings + dates

  static let issue25Inputs: [(String, [Value])] = [
    ("budget == %@", [.double(.infinity)]), ("budget == %@", [.double(-.infinity)]), ("budget == %@", [.double(.nan)]),
    ("budget == CAST('inf', 'NSNumber')", []),
    ("budget BETWEEN {CAST('-inf', 'NSNumber'), CAST('inf', 'NSNumber')}", []),
    ("budget < 1e200", []), ("budget IN {1e200, CAST('nan', 'NSNumber'), 60000000}", []),
    ("budget == %@", [.decimal(.nan)]), ("rating == %@", [.decimal(.nan)]),
    ("SELF" + String(repeating: ".@count", count: 2_000) + " == 1", []),
    ("SELF" + String(repeating: ".@sum", count: 10_000) + " == 1", []),
    ("ANY " + String(repeating: "tags.movies.", count: 100) + "title == 'x'", []),
    ("ANY " + String(repeating: "tags.movies.", count: 7) + "title == 'x'", []),
    (Array(repeating: "sequel", count: 100).joined(separator: ".") + ".title == 'x'", []),
    (Array(repeating: "sequel", count: 40_000).joined(separator: ".") + ".title == 'x'", []),
    (Array(repeating: "sequel", count: 15).joined(separator: ".") + ".title == 'x'", []),
    ("title MATCHES '(a+)+b'", []), ("title MATCHES '(a+)+$'", []), ("title MATCHES[cd] '(A+)+$'", []),
    ("released == %@", [.date(Date(timeIntervalSinceReferenceDate: .nan))]),
    ("released < %@", [.date(Date(timeIntervalSinceReferenceDate: .infinity))]),
    ("abs:(gross) > 0", []), ("abs:(-9223372036854775808) > 0", []), ("gross * 2 > 0", []),
    ("gross + 9223372036854775807 > 0", []), ("-gross > 0", []), ("gross / -1 > 0", []), ("gross % -1 == 0", []),
    ("modulus:by:(gross, 0) == 0", []), ("{1} == {2}", []), ("{1, 2} == {1, 2}", []),
    ("year IN %@", [.array((0..<10_001).map { .int($0) })]), ("year IN %@", [.array((0..<9_000).map { .int($0) })]),
    ("year IN {" + (0..<10_001).map(String.init).joined(separator: ",") + "}", []),
    (Array(repeating: "year == 1", count: 5_001).joined(separator: " AND "), []),
    (Array(repeating: "year == 1", count: 5_001).joined(separator: " OR "), []),
    (String(repeating: "(", count: 5_000) + "year == 1" + String(repeating: ")", count: 5_000), []),
    ("year" + String(repeating: " + 1", count: 5_000) + " > 1", []),
    (String(repeating: "-", count: 5_000) + "year > 1", []),
    (String(repeating: "abs:(", count: 500) + "year" + String(repeating: ")", count: 500) + " > 1", []),
    ("year == 99999999999999999999", []), ("gross == -9223372036854775809", []), ("year == 32768", []),
    ("gross == 9223372036854775807 + 1", []), ("rating == 1e400", []), ("score == 1e39", []),
    ("year BETWEEN %@", [.array([.double(.nan), .double(.infinity)])]),
    ("rating IN %@", [.array([.double(.nan), .double(8.3)])]),
    ("gross == %@", [.double(.infinity)]), ("year < %@", [.double(.nan)]), ("score > %@", [.double(-.infinity)]),
  ]

  /// The next input: one of the five kinds, in turn.
  mutating func input(_ rng: inout SplitMix64) -> String {
    switch Int.random(in: 0..<10, using: &rng) {
    case 0: return randomBytes(&rng)
    case 1: return randomTokens(&rng)
    case 2, 3: return mutate(predicate(&rng, depth: Int.random(in: 0...4, using: &rng)), &rng)
    case 4: return limitShape(&rng)
    default: return predicate(&rng, depth: Int.random(in: 0...4, using: &rng))
    }
  }

  /// Arguments for the specifiers outside quotes, drawn from values that push the rules.
  func arguments(for format: String, _ rng: inout SplitMix64) -> [Value] {
    let pool: [Value] = [
      .double(.nan), .double(.infinity), .double(-.infinity), .int(.max), .int(.min), .int(0), .double(1e200),
      .decimal(.nan), .decimal(Decimal(string: "1e120") ?? 0), .date(Date(timeIntervalSinceReferenceDate: .nan)),
      .date(Date(timeIntervalSinceReferenceDate: .infinity)), .string("Heat"), .string("(a+)+$"), .string(""),
      .array([1, 2, 3]), .array([.double(.nan), .double(.infinity)]), .array([]), .null, .bool(true),
      .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))), .data(Data([0xFF])),
      .objectID(FuzzGraph.id("Movie", 1)), .objectID(FuzzGraph.id("Tag", 1)), .array([.array([.int(1)])]),
    ]
    var result: [Value] = []
    for specifier in formatSpecifiers(in: format) {
      switch specifier {
      case "@": result.append(pool.randomElement(using: &rng) ?? .null)
      case "K":
        let paths = Self.stringPaths + Self.numberPaths + Self.otherPaths
        result.append(.string(paths.randomElement(using: &rng) ?? "title"))
      case "d": result.append(.int(Int64.random(in: .min ... .max, using: &rng)))
      case "f": result.append([.double(.nan), .double(2.5), .double(.infinity)].randomElement(using: &rng) ?? .null)
      default: break
      }
    }
    if Int.random(in: 0..<20, using: &rng) == 0 { result.append(.int(1)) }  // one too many
    if Int.random(in: 0..<20, using: &rng) == 0, !result.isEmpty { result.removeLast() }  // one too few
    return result
  }

  func randomBytes(_ rng: inout SplitMix64) -> String {
    let count = Int.random(in: 0...64, using: &rng)
    let bytes = (0..<count).map { _ in
      // Mostly printable ASCII, where the grammar lives; sometimes anything.
      Bool.random(using: &rng) ? UInt8.random(in: 0x20...0x7E, using: &rng) : UInt8.random(in: 0...255, using: &rng)
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  func randomTokens(_ rng: inout SplitMix64) -> String {
    (0..<Int.random(in: 1...20, using: &rng)).map { _ in Self.tokens.randomElement(using: &rng) ?? "" }
      .joined(separator: Bool.random(using: &rng) ? " " : "")
  }

  func pick(_ list: [String], _ rng: inout SplitMix64) -> String { list.randomElement(using: &rng) ?? "" }

  /// A predicate from the grammar, mostly meaningful for the Movie entity.
  func predicate(_ rng: inout SplitMix64, depth: Int) -> String {
    let choice = Int.random(in: 0..<(depth > 0 ? 10 : 6), using: &rng)
    switch choice {
    case 0, 1: return stringComparison(&rng)
    case 2, 3: return numberComparison(&rng)
    case 4: return otherComparison(&rng)
    case 5: return pick(["TRUEPREDICATE", "FALSEPREDICATE", "title MATCHES '\(pick(Self.patterns, &rng))'"], &rng)
    case 6: return "NOT " + wrapped(predicate(&rng, depth: depth - 1))
    case 7:
      let parts = (0..<Int.random(in: 2...4, using: &rng)).map { _ in wrapped(predicate(&rng, depth: depth - 1)) }
      return parts.joined(separator: Bool.random(using: &rng) ? " AND " : " OR ")
    case 8:
      let inner = predicate(&rng, depth: depth - 1).replacingOccurrences(of: "title", with: "$t.name")
      return "SUBQUERY(tags, $t, \(inner)).@count \(pick(["==", ">", "<"], &rng)) \(Int.random(in: 0...2, using: &rng))"
    default: return "(\(predicate(&rng, depth: depth - 1)))"
    }
  }

  func wrapped(_ predicate: String) -> String { "(\(predicate))" }

  func options(_ rng: inout SplitMix64) -> String { pick(["", "", "[c]", "[d]", "[cd]", "[n]", "[cn]"], &rng) }

  func modifier(_ rng: inout SplitMix64) -> String { pick(["", "", "", "ANY ", "ALL ", "NONE "], &rng) }

  func stringComparison(_ rng: inout SplitMix64) -> String {
    let op = pick(["==", "!=", "<", ">=", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES", "IN"], &rng)
    let rhs: String
    switch op {
    case "MATCHES": rhs = "'\(pick(Self.patterns, &rng))'"
    case "IN": rhs = Bool.random(using: &rng) ? "{'Heat', 'x', nil}" : pick(Self.strings, &rng)
    default: rhs = pick(Self.strings + Self.stringPaths, &rng)
    }
    let lhs =
      Int.random(in: 0..<4, using: &rng) == 0 ? pick(["tags.name", "director.movies.title"], &rng) : pick(Self.stringPaths, &rng)
    return "\(modifier(&rng))\(lhs) \(op)\(options(&rng)) \(rhs)"
  }

  func numberComparison(_ rng: inout SplitMix64) -> String {
    let lhs = pick(Self.numberPaths, &rng)
    switch Int.random(in: 0..<5, using: &rng) {
    case 0:
      return "\(lhs) BETWEEN {\(pick(Self.numbers, &rng)), \(pick(Self.numbers, &rng))}"
    case 1:
      let values = (0..<Int.random(in: 0...6, using: &rng)).map { _ in pick(Self.numbers, &rng) }
      return "\(lhs) IN {\(values.joined(separator: ", "))}"
    case 2:
      return
        "\(modifier(&rng))tags.movies.\(pick(["year", "gross", "rating"], &rng)) \(pick(["==", "<", ">"], &rng)) \(pick(Self.numbers, &rng))"
    default:
      let rhs = Bool.random(using: &rng) ? pick(Self.numbers, &rng) : pick(Self.numberPaths, &rng)
      return "\(lhs) \(pick(["==", "!=", "<", "<=", ">", ">=", "=<", "=>", "<>"], &rng)) \(rhs)"
    }
  }

  func otherComparison(_ rng: inout SplitMix64) -> String {
    let lhs = pick(Self.otherPaths, &rng)
    let rhs = pick(Self.dates + Self.numbers + Self.strings + ["%K", "$x", "{1, 2}", "SELF"], &rng)
    return "\(modifier(&rng))\(lhs) \(pick(["==", "!=", "<", ">", "IN", "CONTAINS"], &rng)) \(rhs)"
  }

  /// A predicate at or past a limit: deep nesting, long key paths, long `IN` lists and chains.
  func limitShape(_ rng: inout SplitMix64) -> String {
    let n = Bool.random(using: &rng) ? Int.random(in: 10...24, using: &rng) : Int.random(in: 1...3_000, using: &rng)
    switch Int.random(in: 0..<10, using: &rng) {
    case 0: return String(repeating: "NOT ", count: n) + "year == 1995"
    case 1: return String(repeating: "(", count: n) + "year == 1995" + String(repeating: ")", count: n)
    case 2: return String(repeating: "abs:(", count: n) + "gross" + String(repeating: ")", count: n) + " > 1"
    case 3: return "year" + String(repeating: pick([" + 1", " * 2", " - -1", " ** 1", " / 3"], &rng), count: n) + " > 1"
    case 4: return "SELF" + String(repeating: pick([".@count", ".@sum", ".@avg"], &rng), count: n) + " == 1"
    case 5: return Array(repeating: "sequel", count: n).joined(separator: ".") + ".title == 'x'"
    case 6: return "ANY " + String(repeating: "tags.movies.", count: n) + "title == 'Heat'"
    case 7:
      let count = Int.random(in: 1...12_000, using: &rng)
      return "year IN {" + (0..<count).map(String.init).joined(separator: ",") + "}"
    case 8: return Array(repeating: "gross != 1", count: n).joined(separator: pick([" AND ", " OR "], &rng))
    default: return "title MATCHES '" + String(repeating: pick(["(a+)+", "(a|a)*", "x?", ".*"], &rng), count: n % 300) + "!'"
    }
  }

  /// `input` with a few random edits: deletions, insertions of tokens or characters, truncation,
  /// duplication of a slice.
  func mutate(_ input: String, _ rng: inout SplitMix64) -> String {
    var scalars = Array(input.unicodeScalars)
    let pool: [Unicode.Scalar] = Array("()[]{}<>=!&|+-*/%@#$.,:'\"\\ aZ09_é\u{301}\u{0}\u{7f}\u{2028}".unicodeScalars)
    for _ in 0..<Int.random(in: 1...4, using: &rng) {
      let at = scalars.isEmpty ? 0 : Int.random(in: 0...scalars.count, using: &rng)
      switch Int.random(in: 0..<6, using: &rng) {
      case 0 where !scalars.isEmpty:
        let end = min(scalars.count, at + Int.random(in: 1...4, using: &rng))
        if at < end { scalars.removeSubrange(at..<end) }
      case 1: scalars.insert(contentsOf: pick(Self.tokens, &rng).unicodeScalars, at: at)
      case 2: scalars.insert(pool.randomElement(using: &rng) ?? " ", at: at)
      case 3: scalars = Array(scalars.prefix(at))
      case 4 where at < scalars.count: scalars[at] = pool.randomElement(using: &rng) ?? " "
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
}
