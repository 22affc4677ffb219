import Foundation
import StrataSQL
import StrataStoreKit
import Testing

@testable import StrataPostgres

/// A characterization test: the SQL (placeholders numbered, and bound values) the compiler makes of every
/// case of ``SQLCompilerCorpus``, compared with what it made when Tests/CompiledSQL/postgres.txt was
/// recorded (`STRATA_RECORD_COMPILED_SQL=1 swift test --filter PostgresQueryCompilerTests` records it
/// again). It needs no server. It guards refactors that must not change the SQL; a deliberate change to
/// the SQL fails it until recorded.
@Suite struct PostgresQueryCompilerTests {
  static let expectation = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "CompiledSQL/postgres.txt")

  static func text(_ fragment: Fragment) -> String { fragment.numbered() + "\n  bound: \(fragment.bindings)" }

  @Test func compilesTheCorpusAsRecorded() throws {
    let schema = try PostgresSchema(model: try SQLCompilerCorpus.model(), schema: "corpus")
    let store = SQLCompilerCorpus.storeIdentifier
    let cases = try SQLCompilerCorpus.compiledCases(
      query: { request in
        let query = try PostgresQueryCompiler.compile(request, schema: schema, storeIdentifier: store)
        return Self.text(Fragment("SELECT t0.\"_pk\" ") + query.fromClause)
          + "\n  order: \(query.orderBy.joined(separator: ", "))"
      },
      dictionary: { request in
        let plan = try DictionaryFetch(request, model: schema.model)
        let query = try PostgresQueryCompiler.compileDictionary(request, plan, schema: schema, storeIdentifier: store)
        let columns = query.columns.map { "\($0.name): \(Self.text($0.sql)) as \($0.decoding)" }
        let groups = query.groupBy.map { Self.text($0) }
        return (columns + [Self.text(query.query.fromClause), "group: \(groups)", "order: \(query.query.orderBy)"])
          .joined(separator: "\n")
      })
    #expect(try SQLCompilerCorpus.mismatch(cases, against: Self.expectation) == nil)
  }
}
