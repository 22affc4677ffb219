import FireballWatch
import Foundation
import Strata
import StrataMemory
import StrataSQLite
import Testing

enum Backend: String, CaseIterable, Sendable {
  case memory, sqlite

  func makeWatch() throws -> FireballWatch {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory()])
    switch self {
    case .memory:
      return FireballWatch(container: try FireballWatch.makeContainer(store: StoreDescription(type: .memory), registry: registry))
    case .sqlite:
      let url = FileManager.default.temporaryDirectory.appending(path: "fireballwatch-\(UUID().uuidString)/FireballWatch.sqlite")
      return FireballWatch(
        container: try FireballWatch.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    }
  }
}

/// A JPL Fireball API file read on its own terms, independently of the module's decoder.
struct JPLFile {
  static let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/FireballWatch/Resources/fireball-api-default-2024-03-21.json")

  static func newer() throws -> URL {
    try #require(Bundle.module.url(forResource: "fireballs-api-v1.2-2026-05", withExtension: "json"))
  }

  var object: [String: Any]

  init(_ url: URL) throws {
    object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
  }

  var fields: [String] { object["fields"] as? [String] ?? [] }
  var rows: [[Any]] {
    get { object["data"] as? [[Any]] ?? [] }
    set { object["data"] = newValue }
  }

  func data() throws -> Data { try JSONSerialization.data(withJSONObject: object) }

  func write() throws -> URL { try Self.write(try data()) }

  static func write(_ data: Data) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appending(path: "fireballs-\(UUID().uuidString).json")
    try data.write(to: url)
    return url
  }

  /// `yyyy-MM-dd HH:mm:ss` in UTC, read by hand with `timegm` (a `DateFormatter` clones its ICU formatter on
  /// every call, which the tests' thousands of rows pay for many times over under the sanitizers).
  static func date(_ text: String) -> Date? {
    let parts = text.split(whereSeparator: { $0 == "-" || $0 == " " || $0 == ":" }).compactMap { Int32($0) }
    guard parts.count == 6, text.utf8.count == 19 else { return nil }
    var time = tm()
    (time.tm_year, time.tm_mon, time.tm_mday) = (parts[0] - 1900, parts[1] - 1, parts[2])
    (time.tm_hour, time.tm_min, time.tm_sec) = (parts[3], parts[4], parts[5])
    return Date(timeIntervalSince1970: TimeInterval(timegm(&time)))
  }

  func value(_ row: [Any], _ field: String) -> String? {
    fields.firstIndex(of: field).flatMap { row[$0] as? String }
  }

  func date(ofRow index: Int) -> String? { value(rows[index], "date") }

  /// The records of the rows, or of the first `count` rows.
  func records(first count: Int? = nil) throws -> [FireballRecord] {
    try rows.prefix(count ?? Int.max).map { row in
      func number(_ field: String) -> Double? { value(row, field).flatMap(Double.init) }
      func signed(_ field: String, _ direction: String, negative: String) -> Double? {
        number(field).map { value(row, direction) == negative ? -$0 : $0 }
      }
      let text = try #require(value(row, "date"))
      return FireballRecord(
        dateTimeStamp: try #require(Self.date(text)),
        radiatedEnergy: number("energy"), impactEnergy: number("impact-e"),
        latitude: signed("lat", "lat-dir", negative: "S"), longitude: signed("lon", "lon-dir", negative: "W"),
        altitude: number("alt"), velocity: number("vel"))
    }
  }

  func nullCount(_ field: String) -> Int {
    guard let index = fields.firstIndex(of: field) else { return 0 }
    return rows.filter { $0[index] is NSNull }.count
  }
}

extension Array where Element == FireballRecord {
  var newestFirst: [FireballRecord] { sorted { $0.dateTimeStamp > $1.dateTimeStamp } }
}
