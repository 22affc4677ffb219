import ArgumentParser
import StrataCLI
import StrataStoreKit

struct FetchCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fetch",
    abstract: "Fetch the objects of one entity, optionally filtered, sorted and paged.")

  @OptionGroup var location: StoreLocation

  @Option(help: "The entity to fetch (see `strata info` for the names).")
  var entity: String

  @Option(
    name: .customLong("where"),
    help: ArgumentHelp(
      "Only objects matching this predicate, in NSPredicate syntax, e.g. \"genre CONTAINS[c] 'drama'\".",
      valueName: "predicate"))
  var predicate: String?

  @Option(
    help: ArgumentHelp(
      "Sort by this attribute, ascending, or descending with :desc (KEY or KEY:desc). Repeat for ties; "
        + "strings compare by code point.", valueName: "key[:desc]"))
  var sort: [String] = []

  @Option(parsing: .unconditional, help: "Return at most this many objects (0 = no limit).")
  var limit: Int?

  @Option(parsing: .unconditional, help: "Skip this many leading objects.")
  var offset: Int = 0

  @Flag(help: "Print only the number of matching objects.")
  var count = false

  @Flag(help: "Print a JSON array of objects: objectID, every attribute, and each to-one relationship's target ID.")
  var json = false

  @Flag(
    help:
      "Print the query the fetch compiles to and the backend's plan for it (SQLite: EXPLAIN QUERY PLAN; LMDB: the index or scan), without running it."
  )
  var explain = false

  func run() throws {
    try runReportingErrors(tool: "strata") {
      try location.withStore { store in
        let entityDescription = try store.model.requireEntity(entity)
        var request = try makeRequest(entity: entityDescription, model: store.model)
        if explain {
          if count { request.resultType = .count }
          let plan = try store.explain(request)
          print(
            json
              ? try jsonString(plan)
              : (["Query:", "  " + plan.query, "Plan:"] + plan.steps.map { "  " + $0 }).joined(separator: "\n"))
          return
        }
        if count {
          print(try store.count(request))
          return
        }
        let snapshots: [Snapshot]
        switch try store.fetch(request, generation: nil) {
        case .snapshots(let s): snapshots = s
        default: throw ToolError("the \(store.storeType) store did not return objects for \(entity)")
        }
        let rows = FetchedRows(entity: entityDescription, snapshots: snapshots)
        print(json ? try jsonString(rows.jsonObjects) : rows.text)
      }
    }
  }

  /// Builds the fetch from the flags, checking the paging numbers and sort keys first.
  func makeRequest(entity: EntityDescription, model: ObjectModel) throws -> FetchDescription {
    if let limit, limit < 0 { throw UsageError("--limit must be 0 or more, not \(limit)") }
    guard offset >= 0 else { throw UsageError("--offset must be 0 or more, not \(offset)") }
    var request = FetchDescription(entityName: entity.name, fetchLimit: limit, fetchOffset: offset)
    if let predicate {
      do {
        request.predicate = try QueryPredicate(format: predicate)
      } catch let error as StoreError {
        throw UsageError("bad --where '\(predicate)': \(error.message)")
      }
    }
    request.sortDescriptors = try sort.map { try Self.parseSort($0, entity: entity, model: model) }
    return request
  }

  /// Parses `KEY` or `KEY:desc` (also `KEY:asc`) and checks the key against the model.
  static func parseSort(_ text: String, entity: EntityDescription, model: ObjectModel) throws -> QuerySort {
    let usage = "write KEY or KEY:desc"
    var key = Substring(text)
    var ascending = true
    if let colon = text.lastIndex(of: ":") {
      key = text[..<colon]
      switch text[text.index(after: colon)...].lowercased() {
      case "asc": ascending = true
      case "desc": ascending = false
      default: throw UsageError("bad --sort '\(text)': the direction must be asc or desc (\(usage))")
      }
    }
    guard !key.isEmpty else { throw UsageError("bad --sort '\(text)': no key (\(usage))") }
    let sort = QuerySort(String(key), ascending: ascending, comparator: .default)
    do {
      try QueryValidator.check([sort], entity: entity, model: model)
    } catch let error as StoreError {
      throw UsageError("bad --sort '\(text)': \(error.message) (\(usage))")
    }
    return sort
  }
}
