import Foundation
import Strata

/// The mirror's own state, one `StrataMirrorState` object per key in the local store, read and written
/// through a context of the mirror so that it is saved in the same local transaction as the data it
/// describes.
struct MirrorState {
  private enum Key: String, CaseIterable {
    case replica, acknowledged, pushed, pulled, hub, rejected, pulledWithout, fieldBases
  }

  private var rows: [String: ManagedObject] = [:]
  private(set) var replicaID: UUID?
  private(set) var acknowledged: HistoryToken?
  private(set) var pushed: Int64 = 0
  private(set) var pulled: Int64 = 0
  /// Where the hub is, as the app gave it (``StoreMirror/rememberHub(_:)``).
  private(set) var hub: String?
  /// The transactions the hub refused, oldest first.
  private(set) var rejected: [RejectedTransaction] = []
  /// The fingerprint of this replica's model when a pull skipped entities or fields it lacks (entries of a
  /// newer replica), `nil` when none was skipped since the log was last pulled from its start.
  private(set) var pulledWithout: String?
  /// For fields whose pulled changes were left alone because a local change of them waited to be pushed:
  /// the position before the first such pulled change, by global identity and field (pushes send it as the
  /// field's base, ``MirrorTransaction/fieldBases``). Cleared once nothing waits.
  private(set) var fieldBases: [UUID: [String: Int64]] = [:]

  init(_ context: ObjectContext) throws {
    let request = FetchRequest<ManagedObject>(entityName: MirrorModel.stateEntity)
    for row in try context.fetch(request) {
      guard let key = row.primitiveValue(forKey: "key"), case .string(let name) = key,
        case .string(let value)? = row.primitiveValue(forKey: "value")
      else { continue }
      rows[name] = row
      switch Key(rawValue: name) {
      case .replica: replicaID = UUID(uuidString: value)
      case .acknowledged: acknowledged = HistoryToken(string: value)
      case .pushed: pushed = Int64(value) ?? 0
      case .pulled: pulled = Int64(value) ?? 0
      case .hub: hub = value
      case .rejected: rejected = try Self.decodeRejected(value)
      case .pulledWithout: pulledWithout = value.isEmpty ? nil : value
      case .fieldBases:
        let decoded = try? JSONDecoder().decode([String: [String: Int64]].self, from: Data(value.utf8))
        for (id, fields) in decoded ?? [:] { if let id = UUID(uuidString: id) { fieldBases[id] = fields } }
      case nil: break
      }
    }
  }

  /// This replica's identity, given (and staged in `context`) on first use.
  mutating func requireReplicaID(in context: ObjectContext) throws -> UUID {
    if let replicaID { return replicaID }
    let id = UUID()
    try set(.replica, id.uuidString, in: context)
    replicaID = id
    return id
  }

  mutating func setAcknowledged(_ token: HistoryToken, position: Int64?, in context: ObjectContext) throws {
    try set(.acknowledged, token.description, in: context)
    acknowledged = token
    if let position, position > pushed {
      try set(.pushed, String(position), in: context)
      pushed = position
    }
  }

  mutating func setPushed(_ position: Int64, in context: ObjectContext) throws {
    guard position > pushed else { return }
    try set(.pushed, String(position), in: context)
    pushed = position
  }

  mutating func setPulled(_ position: Int64, in context: ObjectContext) throws {
    try set(.pulled, String(position), in: context)
    pulled = position
  }

  mutating func setPulledWithout(_ fingerprint: String?, in context: ObjectContext) throws {
    guard fingerprint != pulledWithout else { return }
    try set(.pulledWithout, fingerprint ?? "", in: context)
    pulledWithout = fingerprint
  }

  /// Lowers the recorded base of each field in `bases` to its position there (an earlier one stays).
  mutating func lowerFieldBases(_ bases: [UUID: [String: Int64]], in context: ObjectContext) throws {
    var merged = fieldBases
    for (id, fields) in bases {
      merged[id, default: [:]].merge(fields, uniquingKeysWith: min)
    }
    try setFieldBases(merged, in: context)
  }

  mutating func setFieldBases(_ bases: [UUID: [String: Int64]], in context: ObjectContext) throws {
    guard bases != fieldBases else { return }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let text = try encoder.encode(Dictionary(uniqueKeysWithValues: bases.map { ($0.key.uuidString, $0.value) }))
    try set(.fieldBases, String(decoding: text, as: UTF8.self), in: context)
    fieldBases = bases
  }

  mutating func setHub(_ location: String, in context: ObjectContext) throws {
    try set(.hub, location, in: context)
    hub = location
  }

  /// Replaces the rejected list (kept in order of local sequence, one entry per sequence).
  mutating func setRejected(_ list: [RejectedTransaction], in context: ObjectContext) throws {
    var bySequence: [Int64: RejectedTransaction] = [:]
    for entry in list { bySequence[entry.localSequence] = entry }
    let sorted = bySequence.values.sorted { $0.localSequence < $1.localSequence }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    encoder.dateEncodingStrategy = .iso8601
    try set(.rejected, String(decoding: try encoder.encode(sorted), as: UTF8.self), in: context)
    rejected = sorted
  }

  private mutating func set(_ key: Key, _ value: String, in context: ObjectContext) throws {
    let row: ManagedObject
    if let existing = rows[key.rawValue] {
      row = existing
    } else {
      row = try context.insertObject(entityName: MirrorModel.stateEntity)
      try row.setValue(key.rawValue, forKey: "key")
      rows[key.rawValue] = row
    }
    try row.setValue(value, forKey: "value")
  }

  private static func decodeRejected(_ text: String) throws -> [RejectedTransaction] {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return try decoder.decode([RejectedTransaction].self, from: Data(text.utf8))
  }
}
