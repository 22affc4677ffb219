import CSQLite
import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// Director —< Movie >—< Actor; Movie —> Tag (to-many without inverse, a join table).
enum Sample {
  static let director = EntityDescription(
    name: "Director",
    attributes: [
      AttributeDescription(name: "name", type: .string),
      AttributeDescription(name: "born", type: .date, isOptional: true),
    ],
    relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)])

  static let movie = EntityDescription(
    name: "Movie",
    attributes: [
      AttributeDescription(name: "title", type: .string),
      AttributeDescription(name: "rating", type: .double, isOptional: true),
      AttributeDescription(name: "year", type: .int32, isOptional: true),
      AttributeDescription(name: "budget", type: .decimal, isOptional: true),
      AttributeDescription(name: "code", type: .uuid, isOptional: true),
      AttributeDescription(name: "watched", type: .bool),
      AttributeDescription(name: "note", type: .string, isOptional: true, isTransient: true),
      AttributeDescription(name: "subtitle", type: .string, isOptional: true),
    ],
    relationships: [
      RelationshipDescription(name: "director", destination: "Director", inverse: "movies"),
      RelationshipDescription(name: "actors", destination: "Actor", inverse: "movies", isToMany: true),
      RelationshipDescription(name: "tags", destination: "Tag", isToMany: true),
    ],
    uniquenessConstraints: [["title"]])

  static let actor = EntityDescription(
    name: "Actor",
    attributes: [AttributeDescription(name: "name", type: .string)],
    relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "actors", isToMany: true)])

  static let tag = EntityDescription(name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)])

  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [director, movie, actor, tag])
  }
}

/// The first column of every row `sql` returns, as text, read with the plain sqlite3 API (not the store).
func rawStrings(_ file: URL, _ sql: String) throws -> [String] {
  var db: OpaquePointer?
  var statement: OpaquePointer?
  defer {
    sqlite3_finalize(statement)
    sqlite3_close(db)
  }
  try #require(sqlite3_open(file.path, &db) == SQLITE_OK)
  try #require(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK)
  var result: [String] = []
  while sqlite3_step(statement) == SQLITE_ROW {
    result.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
  }
  return result
}

/// A temporary directory removed when the test ends.
final class TemporaryDirectory {
  let url: URL

  init() throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-sqlite-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(at: url) }

  func file(_ name: String = "store.sqlite") -> URL { url.appendingPathComponent(name) }
}

struct MovieRow {
  var title: String
  var rating: Double?
  var year: Int64?
  var budget: Decimal?
  var code: UUID?
  var watched = false
  var subtitle: String?

  init(
    _ title: String, rating: Double? = nil, year: Int64? = nil, budget: Decimal? = nil, code: UUID? = nil,
    watched: Bool = false, subtitle: String? = nil
  ) {
    self.title = title
    self.rating = rating
    self.year = year
    self.budget = budget
    self.code = code
    self.watched = watched
    self.subtitle = subtitle
  }

  var attributes: [Value] {
    [
      .string(title), rating.map(Value.double) ?? .null, year.map(Value.int) ?? .null,
      budget.map(Value.decimal) ?? .null, code.map(Value.uuid) ?? .null, .bool(watched), "transient!",
      subtitle.map(Value.string) ?? .null,
    ]
  }
}

func movieChange(
  _ row: MovieRow, id: ObjectID = .makeTemporary(entityName: "Movie"), director: ObjectID? = nil,
  expectedVersion: Int64? = nil
) -> ObjectChange {
  ObjectChange(objectID: id, attributes: row.attributes, toOne: [director], expectedVersion: expectedVersion)
}

func namedChange(_ entity: String, _ name: String, id: ObjectID? = nil) -> ObjectChange {
  ObjectChange(
    objectID: id ?? .makeTemporary(entityName: entity), attributes: [.string(name)] + (entity == "Director" ? [.null] : []),
    toOne: [])
}

extension SQLiteStore {
  func snapshots(_ request: FetchDescription) throws -> [Snapshot] {
    guard case .snapshots(let snapshots) = try fetch(request, generation: nil) else {
      Issue.record("expected snapshots")
      return []
    }
    return snapshots
  }

  /// The string attribute at `index` of every fetched object, in order.
  func strings(
    _ entity: String, _ predicate: QueryPredicate? = nil, sort: [QuerySort] = [], limit: Int? = nil, offset: Int = 0,
    attribute index: Int = 0
  ) throws -> [String] {
    let request = FetchDescription(
      entityName: entity, predicate: predicate, sortDescriptors: sort, fetchLimit: limit, fetchOffset: offset)
    return try snapshots(request).map { $0.attributes[index].stringValue ?? "<nil>" }
  }

  func titles(
    _ predicate: QueryPredicate? = nil, sort: [QuerySort] = [], limit: Int? = nil, offset: Int = 0
  ) throws
    -> [String]
  {
    try strings("Movie", predicate, sort: sort, limit: limit, offset: offset)
  }
}

/// `key op value` as an AST value.
func where_(
  _ key: String, _ op: ComparisonOperator, _ value: Value, _ modifier: ComparisonModifier = .direct,
  options: StringOptions = []
) -> QueryPredicate {
  .comparison(Comparison(.keyPath(key), op, .constant(value), modifier: modifier, options: options))
}
