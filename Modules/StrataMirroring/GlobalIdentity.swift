import Foundation
import Strata

/// How a replica names its objects globally, without writing to them.
///
/// An object created on this replica is named by a UUID derived from the replica's identity, its entity
/// and its local primary key: the first 8 bytes are a hash of (replica, entity), the last 8 the primary
/// key. Stores never reuse a primary key (SQLite's `AUTOINCREMENT`, LMDB's and PostgreSQL's counters), so
/// the name is stable, needs no write (a write would change the object's version under the app's
/// contexts) and can be turned back into the local object. An object created by a pull keeps the UUID its
/// creator gave it in its `strataMirrorID` attribute, written in the same save that creates it.
struct GlobalIdentity: Sendable {
  let replicaID: UUID
  let storeIdentifier: String
  private let entitiesByPrefix: [UInt64: String]

  init(replicaID: UUID, storeIdentifier: String, model: ObjectModel) {
    self.replicaID = replicaID
    self.storeIdentifier = storeIdentifier
    var byPrefix: [UInt64: String] = [:]
    for entity in model.entities { byPrefix[Self.prefix(replicaID, entity.name)] = entity.name }
    entitiesByPrefix = byPrefix
  }

  /// The global identity of the saved `object` (its `strataMirrorID`, else the name its key gives).
  func globalID(of object: ManagedObject) -> UUID? {
    globalID(of: object.objectID, stored: object.primitiveValue(forKey: MirrorModel.identityAttribute))
  }

  /// The global identity of the saved object `id` whose `strataMirrorID` holds `stored`.
  func globalID(of id: ObjectID, stored: Value?) -> UUID? {
    if case .uuid(let global)? = stored { return global }
    guard !id.isTemporary, let primaryKey = id.primaryKey else { return nil }
    var bytes = withUnsafeBytes(of: Self.prefix(replicaID, id.entityName).bigEndian, Array.init)
    bytes += withUnsafeBytes(of: primaryKey.bigEndian, Array.init)
    return UUID(
      uuid: (
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
        bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
      ))
  }

  /// The local object that this replica created and named `global` (of the entity the name encodes, a
  /// sub-entity of the one a relationship names included), `nil` when `global` was given by another replica.
  func localObjectID(for global: UUID) -> ObjectID? {
    let bytes = withUnsafeBytes(of: global.uuid, Array.init)
    let head = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    guard let entityName = entitiesByPrefix[head] else { return nil }
    let primaryKey = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    return ObjectID(entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: Int64(bitPattern: primaryKey))
  }

  /// The live object of `entity` in `context` with global identity `id`, `nil` when there is none; without
  /// `includingPendingChanges`, an object named by an unsaved change of `context` is not found by that name.
  func liveObject(
    _ id: UUID, entity: String, in context: ObjectContext, includingPendingChanges: Bool = true
  ) throws -> ManagedObject? {
    // An object this replica created is found by its key; once deleted here, the hub may have restored it
    // (a denied delete) as a new local object holding its name, found as pulled objects are.
    if let local = localObjectID(for: id), let object = try? context.existingObject(with: local), !object.isDeleted {
      return object
    }
    var request = FetchRequest<ManagedObject>(
      entityName: entity,
      predicate: try QueryPredicate(format: "\(MirrorModel.identityAttribute) == %@", argumentArray: [id]))
    request.fetchLimit = 1
    request.includesPendingChanges = includingPendingChanges
    return try context.fetch(request).first.flatMap { $0.isDeleted ? nil : $0 }
  }

  /// FNV-1a over the replica's bytes and the entity's name: stable across processes and machines.
  private static func prefix(_ replicaID: UUID, _ entityName: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in withUnsafeBytes(of: replicaID.uuid, Array.init) + Array(entityName.utf8) {
      hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return hash
  }
}
