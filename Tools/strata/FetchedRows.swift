import Foundation
import StrataCLI
import StrataStoreKit

/// A JSON value with numbers kept as numbers.
enum JSONValue: Encodable {
  case null
  case bool(Bool)
  case int(Int64)
  case double(Double)
  case string(String)
  case array([JSONValue])

  func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    switch self {
    case .null: try c.encodeNil()
    case .bool(let b): try c.encode(b)
    case .int(let i): try c.encode(i)
    case .double(let d): try d.isFinite ? c.encode(d) : c.encode(String(d))  // JSON has no inf/nan
    case .string(let s): try c.encode(s)
    case .array(let items): try c.encode(items)
    }
  }

  /// A stored value as JSON: dates ISO-8601 (UTC, fractional seconds when they have any), data base64, UUID/URL/decimal strings.
  init(_ value: Value) {
    switch value {
    case .null: self = .null
    case .int(let i): self = .int(i)
    case .double(let d): self = .double(d)
    case .decimal(let d): self = .string("\(d)")
    case .string(let s): self = .string(s)
    case .bool(let b): self = .bool(b)
    case .date(let d):
      self = .string(
        d.formatted(d.timeIntervalSinceReferenceDate.rounded() == d.timeIntervalSinceReferenceDate ? isoSeconds : isoDate))
    case .data(let d): self = .string(d.base64EncodedString())
    case .uuid(let u): self = .string(u.uuidString)
    case .url(let u): self = .string(u.absoluteString)
    case .objectID(let id): self = .string(id.uriRepresentation)
    case .array(let items): self = .array(items.map(JSONValue.init))
    }
  }

  /// The value as one table cell.
  var text: String {
    switch self {
    case .null: "nil"
    case .bool(let b): b ? "true" : "false"
    case .int(let i): String(i)
    case .double(let d): String(d)
    case .string(let s): s.replacingOccurrences(of: "\n", with: "\\n")
    case .array(let items): "{" + items.map(\.text).joined(separator: ", ") + "}"
    }
  }
}

/// Dates as the apps print them (`2001-04-25T00:00:00Z`), with fractional seconds only when a value has them.
private let isoDate = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
private let isoSeconds = Date.ISO8601FormatStyle(timeZone: .gmt)

/// Fetched snapshots shaped for output: stored attributes (transient ones are never stored) and to-one targets.
struct FetchedRows {
  var entity: EntityDescription
  var snapshots: [Snapshot]

  private var storedAttributes: [(index: Int, name: String)] {
    entity.attributes.enumerated().filter { !$0.element.isTransient }.map { ($0.offset, $0.element.name) }
  }

  /// One object per snapshot: `objectID`, each stored attribute, each to-one relationship's target URI.
  var jsonObjects: [[String: JSONValue]] {
    snapshots.map { snapshot in
      var object: [String: JSONValue] = [:]
      for (index, name) in storedAttributes {
        object[name] = index < snapshot.attributes.count ? JSONValue(snapshot.attributes[index]) : .null
      }
      for (index, relationship) in entity.toOneRelationships.enumerated() {
        let target = index < snapshot.toOne.count ? snapshot.toOne[index] : nil
        object[relationship.name] = target.map { .string($0.uriRepresentation) } ?? .null
      }
      object["objectID"] = .string(snapshot.objectID.uriRepresentation)
      return object
    }
  }

  /// A table of object IDs and stored attributes.
  var text: String {
    if snapshots.isEmpty { return "No \(entity.name) objects." }
    let attributes = storedAttributes
    return textTable(
      headers: ["objectID"] + attributes.map(\.name),
      rows: snapshots.map { snapshot in
        [snapshot.objectID.uriRepresentation]
          + attributes.map { index, _ in
            index < snapshot.attributes.count ? JSONValue(snapshot.attributes[index]).text : "nil"
          }
      })
  }
}
