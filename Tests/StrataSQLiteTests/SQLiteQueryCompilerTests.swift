import Foundation
import StrataSQL
import StrataStoreKit
import Testing

@testable import StrataSQLite

/// A characterization test: the SQL (and bound values) the compiler makes of every case of
/// ``SQLCompilerCorpus``, compared with what it made when Tests/CompiledSQL/sqlite.txt was recorded
/// (`STRATA_RECORD_COMPILED_SQL=1 swift test --filter SQLiteQueryCompilerTests` records it again). It
/// guards refactors that must not change the SQL; a deliberate change to the SQL fails it until recorded.
@Suite struct SQLiteQueryCompilerTests {
  static let expectation = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "CompiledSQL/sqlite.txt")

  static func text(_ fragment: Fragment) -> String { fragment.sql + "\n  bound: \(fragment.bindings)" }

  static func sql(_ text: String) -> String { text }
  static func sql(_ fragment: Fragment) -> String { fragment.sql }

  @Test func compilesTheCorpusAsRecorded() throws {
    let schema = try SQLiteSchema(model: try SQLCompilerCorpus.model())
    let store = SQLCompilerCorpus.storeIdentifier
    let item = try schema.table("Item").entity
    let cases = try SQLCompilerCorpus.compiledCases(
      query: { request in
        let query = try SQLiteQueryCompiler.compile(request, schema: schema, storeIdentifier: store)
        return Self.text(Fragment("SELECT t0.\"_pk\" ") + query.fromClause)
          + "\n  order: \(query.orderBy.joined(separator: ", "))"
      },
      dictionary: { request in
        let plan = try DictionaryFetch(request, model: schema.model)
        let query = try SQLiteQueryCompiler.compileDictionary(request, plan, schema: schema, storeIdentifier: store)
        let columns = query.columns.map { "\($0.name): \(Self.text($0.sql)) as \($0.decoding)" }
        return
          (columns + [
            Self.text(query.query.fromClause), "group: \(query.groupBy.map { Self.sql($0) })",
            "order: \(query.query.orderBy)",
          ])
          .joined(separator: "\n")
      },
      value: { format in
        let (checked, _) = try QueryValidator.checkExpression(
          try QueryExpression(format: format), entity: item, model: schema.model)
        return Self.text(try SQLiteQueryCompiler.compileValue(checked, schema: schema, storeIdentifier: store, root: item))
      })
    #expect(try SQLCompilerCorpus.mismatch(cases, against: Self.expectation) == nil)
  }
}
