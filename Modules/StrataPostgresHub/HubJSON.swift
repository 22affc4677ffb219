import Foundation
import StrataCore
import StrataMirroring

/// Writes the JSON of the two payloads every push stores — an object's state and a log entry — directly,
/// in the form their `Codable` conformances give (`JSONDecoder` reads them back unchanged): a push spent
/// most of its time in `JSONEncoder` otherwise. A value of a kind written rarely (a decimal, a URL, a
/// reference, an array, a double or date that is not finite) is encoded by `JSONEncoder` in place.
struct HubJSON {
  private(set) var text = ""

  /// The JSON of `object`.
  static func encode(_ object: HubLedger.Object) throws -> String {
    var json = HubJSON()
    try json.write(object)
    return json.text
  }

  /// The JSON of `entry`.
  static func encode(_ entry: MirrorLogEntry) throws -> String {
    var json = HubJSON()
    try json.write(entry)
    return json.text
  }

  private mutating func write(_ object: HubLedger.Object) throws {
    text += "{"
    if let deletedAt = object.deletedAt { text += "\"deletedAt\":\(deletedAt)," }
    if let deletedBy = object.deletedBy { text += "\"deletedBy\":\"\(deletedBy.uuidString)\"," }
    text += "\"entityName\":"
    write(object.entityName)
    text += ",\"fieldPositions\":{"
    writeMembers(object.fieldPositions) { $0.text += String($1) }
    text += "},\"fieldReplicas\":{"
    writeMembers(object.fieldReplicas) { $0.text += "\"\($1.uuidString)\"" }
    text += "},\"fields\":{"
    try writeMembers(object.fields) { try $0.write($1) }
    text += "}"
    if let mergedInto = object.mergedInto { text += ",\"mergedInto\":\"\(mergedInto.uuidString)\"" }
    text += "}"
  }

  private mutating func write(_ entry: MirrorLogEntry) throws {
    text += "{\"changes\":["
    for (index, change) in entry.changes.enumerated() {
      if index > 0 { text += "," }
      text += "{\"entityName\":"
      write(change.entityName)
      text += ",\"fields\":{"
      try writeMembers(change.fields) { try $0.write($1) }
      text += "},\"globalID\":\"\(change.globalID.uuidString)\",\"kind\":\"\(change.kind.rawValue)\"}"
    }
    text += "],\"localSequence\":\(entry.localSequence),\"position\":\(entry.position),"
    text += "\"replicaID\":\"\(entry.replicaID.uuidString)\"}"
  }

  private mutating func writeMembers<V>(_ members: [String: V], _ value: (inout HubJSON, V) throws -> Void) rethrows {
    for (index, name) in members.keys.sorted().enumerated() {
      if index > 0 { text += "," }
      write(name)
      text += ":"
      if let member = members[name] { try value(&self, member) }
    }
  }

  private mutating func write(_ field: MirrorField) throws {
    switch field {
    case .value(let value):
      text += "{\"value\":{\"_0\":"
      try write(value)
      text += "}}"
    case .reference(let target?): text += "{\"reference\":{\"_0\":\"\(target.uuidString)\"}}"
    case .reference(nil): text += "{\"reference\":{}}"
    case .references(let targets):
      text += "{\"references\":{\"_0\":["
      text += targets.map { "\"\($0.uuidString)\"" }.joined(separator: ",")
      text += "]}}"
    }
  }

  private mutating func write(_ value: Value) throws {
    switch value {
    case .null: text += "{\"null\":{}}"
    case .int(let int): text += "{\"int\":{\"_0\":\(int)}}"
    case .bool(let bool): text += "{\"bool\":{\"_0\":\(bool)}}"
    case .uuid(let uuid): text += "{\"uuid\":{\"_0\":\"\(uuid.uuidString)\"}}"
    case .string(let string):
      text += "{\"string\":{\"_0\":"
      write(string)
      text += "}}"
    case .double(let double) where double.isFinite: text += "{\"double\":{\"_0\":\(double)}}"
    // `JSONEncoder`'s default strategies: a date as its seconds since 2001, bytes as Base64.
    case .date(let date) where date.timeIntervalSinceReferenceDate.isFinite:
      text += "{\"date\":{\"_0\":\(date.timeIntervalSinceReferenceDate)}}"
    case .data(let data): text += "{\"data\":{\"_0\":\"\(data.base64EncodedString())\"}}"
    default: text += String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }
  }

  /// `string` as a JSON string: quotes, backslashes and control characters escaped.
  private mutating func write(_ string: String) {
    text += "\""
    guard string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
      text += string
      text += "\""
      return
    }
    var plain = Substring.UnicodeScalarView()
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": plain.append(contentsOf: "\\\"".unicodeScalars)
      case "\\": plain.append(contentsOf: "\\\\".unicodeScalars)
      case "\n": plain.append(contentsOf: "\\n".unicodeScalars)
      case "\r": plain.append(contentsOf: "\\r".unicodeScalars)
      case "\t": plain.append(contentsOf: "\\t".unicodeScalars)
      case _ where scalar.value < 0x20:
        plain.append(contentsOf: String(format: "\\u%04x", scalar.value).unicodeScalars)
      default: plain.append(scalar)
      }
    }
    text += String(plain)
    text += "\""
  }
}
