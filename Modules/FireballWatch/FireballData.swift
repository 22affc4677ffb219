import Foundation

/// What is wrong with fireball data, and where: the 1-based row of `data` and its date when readable.
public struct FireballDataError: Error, Hashable, CustomStringConvertible {
  /// The file or URL the data came from, when known.
  public var source: String?
  public var row: Int?
  public var date: String?
  public var reason: String

  public init(source: String? = nil, row: Int? = nil, date: String? = nil, reason: String) {
    self.source = source
    self.row = row
    self.date = date
    self.reason = reason
  }

  public var description: String {
    let place = row.map { "row \($0)\(date.map { " (\($0))" } ?? ""): " } ?? ""
    return "\(source.map { "\($0): " } ?? "")\(place)\(reason)"
  }
}

/// Reads the JSON of NASA/JPL's Fireball Data API (`https://ssd-api.jpl.nasa.gov/fireball.api`):
/// `fields` names the columns, `data` holds one row per fireball, every value a string or null.
///
/// The whole document is checked before anything is returned: one bad row fails it all.
public enum FireballData {
  /// The columns JPL documents, each optional but `date`.
  public static let knownFields: Set<String> = ["date", "energy", "impact-e", "lat", "lat-dir", "lon", "lon-dir", "alt", "vel"]

  /// The fireballs of a JPL Fireball API response, in `data` order.
  /// - Throws: ``FireballDataError`` naming the row (and its date) at fault.
  public static func decode(_ json: Data) throws -> [FireballRecord] {
    let document: Any
    do {
      document = try JSONSerialization.jsonObject(with: json)
    } catch {
      throw FireballDataError(reason: "not valid JSON (is the file truncated?)")
    }
    guard let object = document as? [String: Any] else {
      throw FireballDataError(reason: "not a JPL fireball response: expected a JSON object with 'fields' and 'data'")
    }
    guard let fields = object["fields"] as? [String] else {
      throw FireballDataError(reason: "no 'fields' list of column names")
    }
    guard let rows = object["data"] as? [Any] else { throw FireballDataError(reason: "no 'data' list of rows") }
    let columns = try Columns(fields)
    if let count = object["count"] as? String, let expected = Int(count), expected != rows.count {
      throw FireballDataError(reason: "'count' is \(expected) but 'data' holds \(rows.count) rows (is the file truncated?)")
    }
    var records: [FireballRecord] = []
    records.reserveCapacity(rows.count)
    var rowOfDate: [Date: Int] = [:]
    for (index, row) in rows.enumerated() {
      let record = try columns.record(from: row, rowNumber: index + 1)
      if let first = rowOfDate.updateValue(index + 1, forKey: record.dateTimeStamp) {
        throw FireballDataError(
          row: index + 1, date: FireballDate.string(from: record.dateTimeStamp), reason: "the same date as row \(first)")
      }
      records.append(record)
    }
    return records
  }

  private struct Columns {
    let count: Int
    let position: [String: Int]

    init(_ fields: [String]) throws {
      var position: [String: Int] = [:]
      for (index, field) in fields.enumerated() {
        guard FireballData.knownFields.contains(field) else {
          throw FireballDataError(
            reason: "unknown field '\(field)' in 'fields' (known: \(FireballData.knownFields.sorted().joined(separator: ", ")))")
        }
        guard position.updateValue(index, forKey: field) == nil else {
          throw FireballDataError(reason: "field '\(field)' is named twice in 'fields'")
        }
      }
      guard position["date"] != nil else { throw FireballDataError(reason: "'fields' has no 'date' column") }
      for (value, direction) in [("lat", "lat-dir"), ("lon", "lon-dir")] {
        switch (position[value], position[direction]) {
        case (_?, nil): throw FireballDataError(reason: "'fields' has '\(value)' without '\(direction)'")
        case (nil, _?): throw FireballDataError(reason: "'fields' has '\(direction)' without '\(value)'")
        default: break
        }
      }
      count = fields.count
      self.position = position
    }

    func record(from row: Any, rowNumber: Int) throws -> FireballRecord {
      let values = row as? [Any]
      let dateText = values.flatMap { values in position["date"].flatMap { $0 < values.count ? values[$0] as? String : nil } }
      func failure(_ reason: String) -> FireballDataError { FireballDataError(row: rowNumber, date: dateText, reason: reason) }
      guard let values else { throw failure("not a list of values") }
      guard values.count == count else { throw failure("\(values.count) values, but 'fields' names \(count)") }
      func text(_ field: String) throws -> String? {
        guard let index = position[field] else { return nil }
        switch values[index] {
        case is NSNull: return nil
        case let string as String: return string
        default: throw failure("\(field) is \(values[index]), not a string or null")
        }
      }
      func number(_ field: String) throws -> Double? {
        guard let text = try text(field) else { return nil }
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite else {
          throw failure("\(field) '\(text)' is not a number")
        }
        return value
      }
      func signed(_ field: String, _ directionField: String, positive: String, negative: String) throws -> Double? {
        let direction = try text(directionField)
        if let direction, direction != positive, direction != negative {
          throw failure("\(directionField) '\(direction)' is not \(positive) or \(negative)")
        }
        switch (try number(field), direction) {
        case (nil, nil): return nil
        case (nil, _?): throw failure("\(directionField) is given but \(field) is missing")
        case (_?, nil): throw failure("\(field) is given but \(directionField) is missing")
        case (let value?, let direction?): return direction == negative ? -value : value
        }
      }
      guard let dateText = try text("date") else { throw failure("date is missing") }
      guard let date = FireballDate.parse(dateText) else {
        throw FireballDataError(row: rowNumber, reason: "date '\(dateText)' is not yyyy-MM-dd HH:mm:ss")
      }
      return FireballRecord(
        dateTimeStamp: date, radiatedEnergy: try number("energy"), impactEnergy: try number("impact-e"),
        latitude: try signed("lat", "lat-dir", positive: "N", negative: "S"),
        longitude: try signed("lon", "lon-dir", positive: "E", negative: "W"),
        altitude: try number("alt"), velocity: try number("vel"))
    }
  }
}
