import Foundation
import Strata

/// A seed file that cannot be imported, with the file and the place in it that is wrong.
///
/// ```
/// seed.json: response.venues[3].location.distance: expected a number, found a string
/// ```
public struct SeedError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The file as the user named it.
  public var file: String
  /// The JSON path of the wrong value (`response.venues[3].stats`), empty for the whole file.
  public var path: String
  public var problem: String

  public init(file: String, path: String = "", problem: String) {
    self.file = file
    self.path = path
    self.problem = problem
  }

  public var description: String {
    path.isEmpty ? "\(file): \(problem)" : "\(file): \(path): \(problem)"
  }
}

/// The venues of a Foursquare v2 `venues/search` response, decoded and checked, not yet inserted.
struct SeedFile {
  var venues: [SeedVenue]

  static func read(_ url: URL, named file: String) throws -> SeedFile {
    let data: Data
    do {
      data = try Data(contentsOf: url)
    } catch {
      let exists = FileManager.default.fileExists(atPath: url.path)
      throw SeedError(file: file, problem: exists ? "cannot be read" : "no such file")
    }
    if let invalid = InvalidUTF8.first(in: data) {
      throw SeedError(file: file, problem: "is not UTF-8 text: \(invalid)")
    }
    do {
      _ = try JSONSerialization.jsonObject(with: data)
    } catch {
      throw SeedError(file: file, syntaxError: error)
    }
    let response: SearchResponse
    do {
      response = try JSONDecoder().decode(SearchResponse.self, from: data)
    } catch let error as DecodingError {
      throw SeedError(file: file, decodingError: error)
    }
    let venues = response.response.venues
    for (index, venue) in venues.enumerated() {
      try venue.validate(file: file, path: "response.venues[\(index)]")
    }
    return SeedFile(venues: venues)
  }
}

struct SearchResponse: Decodable {
  struct Body: Decodable {
    var venues: [SeedVenue]
  }
  var response: Body
}

struct SeedVenue: Decodable {
  struct Contact: Decodable {
    var phone: String?
  }
  struct Location: Decodable {
    var address: String?
    var crossStreet: String?
    var city: String?
    var state: String?
    var postalCode: String?
    var country: String?
    var distance: Int
    var lat: Double?
    var lng: Double?
  }
  struct Price: Decodable {
    var currency: String
  }
  struct Specials: Decodable {
    var count: Int
  }
  struct Stats: Decodable {
    var checkinsCount: Int
    var usersCount: Int
    var tipCount: Int
  }
  struct Category: Decodable {
    var name: String
  }

  var name: String
  var contact: Contact?
  var location: Location
  var price: Price?
  var specials: Specials?
  var stats: Stats
  var categories: [Category]?

  func validate(file: String, path: String) throws {
    func fail(_ key: String, _ problem: String) -> SeedError {
      SeedError(file: file, path: "\(path).\(key)", problem: problem)
    }
    if name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw fail("name", "is empty") }
    if let currency = price?.currency, PriceCategory(rawValue: currency) == nil {
      let valid = PriceCategory.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
      throw fail("price.currency", "'\(currency)' is not one of \(valid)")
    }
    let counts: [(String, Int)] = [
      ("location.distance", location.distance), ("specials.count", specials?.count ?? 0),
      ("stats.checkinsCount", stats.checkinsCount), ("stats.usersCount", stats.usersCount),
      ("stats.tipCount", stats.tipCount),
    ]
    for (key, value) in counts where value < 0 { throw fail(key, "is negative (\(value))") }
  }
}

extension SeedError {
  init(file: String, syntaxError: any Error) {
    var detail = (syntaxError as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? ""
    if detail.hasSuffix(".") { detail.removeLast() }
    if let first = detail.first { detail = first.lowercased() + detail.dropFirst() }
    self.init(file: file, problem: detail.isEmpty ? "is not valid JSON" : "is not valid JSON: \(detail)")
  }

  init(file: String, decodingError: DecodingError) {
    switch decodingError {
    case .typeMismatch(let type, let context):
      let found = Self.found(in: context.debugDescription).map { ", found \($0)" } ?? ""
      self.init(file: file, path: Self.path(context.codingPath), problem: "expected \(Self.describe(type))\(found)")
    case .valueNotFound(let type, let context):
      self.init(
        file: file, path: Self.path(context.codingPath), problem: "is null, expected \(Self.describe(type))")
    case .keyNotFound(let key, let context):
      self.init(file: file, path: Self.path(context.codingPath + [key]), problem: "is missing")
    case .dataCorrupted(let context):
      self.init(file: file, path: Self.path(context.codingPath), problem: context.debugDescription)
    @unknown default:
      self.init(file: file, problem: "\(decodingError)")
    }
  }

  static func path(_ codingPath: [any CodingKey]) -> String {
    var text = ""
    for key in codingPath {
      if let index = key.intValue {
        text += "[\(index)]"
      } else {
        text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
      }
    }
    return text
  }

  /// What JSONDecoder says it found ("Expected to decode Int but found a string instead.").
  static func found(in debugDescription: String) -> String? {
    guard let start = debugDescription.range(of: "found "),
      let end = debugDescription.range(of: " instead", range: start.upperBound..<debugDescription.endIndex)
    else { return nil }
    let what = String(debugDescription[start.upperBound..<end.lowerBound])
    switch what {
    case "a dictionary": return "an object"
    case "an array": return "a list"
    default: return what
    }
  }

  static func describe(_ type: Any.Type) -> String {
    switch type {
    case is String.Type: "a string"
    case is Int.Type, is Double.Type: "a number"
    case is [Any].Type: "a list"
    case is [String: Any].Type: "an object"
    default: "\(type)"
    }
  }
}
