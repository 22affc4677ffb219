import Foundation
import StrataCore

/// How the hub settles one field that two replicas changed: the pusher changed it from a base on which
/// another replica's change was not yet seen.
///
/// ```swift
/// let keepTheServers = MirrorConflictPolicy.hubWins
/// let longest = MirrorConflictPolicy.resolver(named: "longest text, v1") { values in
///   guard case .value(.string(let local)) = values.local, case .value(.string(let hub))? = values.hub else { return values.local }
///   return local.count >= hub.count ? values.local : .value(.string(hub))
/// }
/// ```
public enum MirrorConflictPolicy: Sendable {
  /// The later push to the hub wins the field (the default).
  case laterPushWins
  /// The value the hub holds wins: the pusher's value is dropped, and the pusher's replica takes the hub's
  /// value back when it pulls its own entry.
  case hubWins
  /// A pure function of the base, local and hub values returns the value to keep. It runs inside the hub's
  /// transaction, in whichever process pushes, so it must not depend on anything but its argument. A value
  /// that does not fit the field (another type, out of bounds, a target the hub does not hold alive)
  /// keeps the hub's value.
  case custom(MirrorResolver)
  /// A custom resolver, as ``custom(_:)``, with a name the hub records beside its model: a resolver is code,
  /// so its name (give it a version: "sum of both changes, v2") is how the hub tells that every replica
  /// merges with the same one. A replica given another name for an entity is refused when it connects.
  case resolver(named: String, MirrorResolver)

  /// The policy's name, as recorded in a ``MirrorConflict``.
  public var rule: MirrorConflict.Rule {
    switch self {
    case .laterPushWins: .laterPushWins
    case .hubWins: .hubWins
    case .custom, .resolver: .custom
    }
  }

  /// How the hub records the policy: `laterPushWins`, `hubWins`, `custom` (a resolver without a name: two
  /// of them cannot be told apart) or `custom 'name'`.
  ///
  /// ```swift
  /// let recorded = MirrorConflictPolicy.resolver(named: "sum, v1") { $0.local }.recordedName  // custom 'sum, v1'
  /// ```
  public var recordedName: String {
    switch self {
    case .laterPushWins: "laterPushWins"
    case .hubWins: "hubWins"
    case .custom: "custom"
    case .resolver(let name, _): "custom '\(name)'"
    }
  }
}

/// A custom conflict resolver: given the three values of one field, the value to keep.
///
/// ```swift
/// let sum: MirrorResolver = { values in
///   guard case .value(.int(let local)) = values.local, case .value(.int(let hub))? = values.hub,
///     case .value(.int(let base))? = values.base
///   else { return values.local }
///   return .value(.int(local + hub - base))
/// }
/// ```
public typealias MirrorResolver = @Sendable (MirrorConflictValues) -> MirrorField

/// The values of one field two replicas changed, given to a ``MirrorResolver``.
///
/// ```swift
/// let values = MirrorConflictValues(
///   entityName: "Potato", field: "rating", base: .value(.int(3)), local: .value(.int(5)), hub: .value(.int(4)))
/// ```
public struct MirrorConflictValues: Sendable, Hashable {
  /// The object's entity.
  public var entityName: String
  /// The field's name.
  public var field: String
  /// The field's value at the pusher's base position (the last hub position it had pulled): what both
  /// sides changed from; `nil` when the object or the field did not exist on the hub then.
  public var base: MirrorField?
  /// The pushed value.
  public var local: MirrorField
  /// The hub's current value (another replica's change the pusher had not seen).
  public var hub: MirrorField?

  /// The values of `field` of an object of `entityName`.
  ///
  /// ```swift
  /// let values = MirrorConflictValues(entityName: "Potato", field: "rating", base: nil, local: .value(.int(5)), hub: nil)
  /// ```
  public init(entityName: String, field: String, base: MirrorField?, local: MirrorField, hub: MirrorField?) {
    self.entityName = entityName
    self.field = field
    self.base = base
    self.local = local
    self.hub = hub
  }
}

/// What happens when one replica deletes an object another replica changed without having seen the
/// delete (or the other way round).
///
/// ```swift
/// let rule = MirrorDeleteRule.updateWins
/// ```
public enum MirrorDeleteRule: String, Sendable, Hashable, Codable {
  /// The delete wins (the default): an update of a deleted object is dropped, and a delete of an object
  /// changed since the deleter's base is applied.
  case deleteWins
  /// The update wins: a delete of an object another replica changed since the deleter's base is not
  /// applied (the object is restored on the deleter, as a delete a Deny rule refuses), and an update of an
  /// object deleted since the updater's base brings it back with its last values and the update.
  case updateWins
}

/// The conflict rules of one entity.
///
/// ```swift
/// let notes = MirrorPolicy(conflicts: .hubWins, deleteVersusUpdate: .updateWins)
/// ```
public struct MirrorPolicy: Sendable {
  /// How a field changed on two replicas is settled.
  public var conflicts: MirrorConflictPolicy
  /// Whether a delete or a concurrent update wins.
  public var deleteVersusUpdate: MirrorDeleteRule

  /// A policy; the defaults are the hub's standard rules.
  ///
  /// ```swift
  /// let standard = MirrorPolicy()  // later push wins, delete wins
  /// ```
  public init(conflicts: MirrorConflictPolicy = .laterPushWins, deleteVersusUpdate: MirrorDeleteRule = .deleteWins) {
    self.conflicts = conflicts
    self.deleteVersusUpdate = deleteVersusUpdate
  }

  /// How the hub records the policy (see ``MirrorPolicies``): both rules, in one line.
  ///
  /// ```swift
  /// let recorded = MirrorPolicy(conflicts: .hubWins).recordedName  // conflicts hubWins, delete versus update deleteWins
  /// ```
  public var recordedName: String {
    "conflicts \(conflicts.recordedName), delete versus update \(deleteVersusUpdate.rawValue)"
  }
}

/// The conflict rules of a hub, per entity. The merge runs inside the hub's transaction in whichever
/// process pushes, so every process that builds the hub (every replica) must be given the same policies:
/// the hub records each entity's policy (``MirrorPolicy/recordedName``) the first time a replica of a model
/// with that entity connects, and refuses a replica whose policy for one of its entities differs.
///
/// ```swift
/// let policies = MirrorPolicies(entities: [
///   "Tasting": MirrorPolicy(conflicts: .hubWins),
///   "Potato": MirrorPolicy(deleteVersusUpdate: .updateWins),
/// ])
/// let hub = MemoryHub(model: model, policies: policies)
/// ```
public struct MirrorPolicies: Sendable {
  /// The rules of every entity not listed in ``entities``.
  public var defaultPolicy: MirrorPolicy
  /// The rules of some entities, by entity name.
  public var entities: [String: MirrorPolicy]

  /// Policies: `entities` for the entities they name, `defaultPolicy` for the others.
  ///
  /// ```swift
  /// let policies = MirrorPolicies(entities: ["Tasting": MirrorPolicy(conflicts: .hubWins)])
  /// ```
  public init(defaultPolicy: MirrorPolicy = MirrorPolicy(), entities: [String: MirrorPolicy] = [:]) {
    self.defaultPolicy = defaultPolicy
    self.entities = entities
  }

  /// The hub's standard rules for every entity: the later push wins, a delete wins.
  public static let standard = MirrorPolicies()

  /// The rules of `entityName`.
  ///
  /// ```swift
  /// let rule = MirrorPolicies.standard.policy(for: "Potato").deleteVersusUpdate  // .deleteWins
  /// ```
  public func policy(for entityName: String) -> MirrorPolicy {
    entities[entityName] ?? defaultPolicy
  }
}

extension MirrorPolicies {
  /// The recorded name of the policy of each of `entities`: what a hub keeps to tell that every replica
  /// merges by the same rules.
  package func recorded(for entities: [String]) -> [String: String] {
    Dictionary(entities.map { ($0, policy(for: $0).recordedName) }) { first, _ in first }
  }

  /// Why a replica whose policies are recorded as `mine` may not push to a hub that recorded `hub`: the
  /// first entity (by name) both describe with different policies, in one line; `nil` when they agree.
  package static func disagreement(hub: [String: String], mine: [String: String]) -> String? {
    for (entity, own) in mine.sorted(by: { $0.key < $1.key }) {
      guard let recorded = hub[entity], recorded != own else { continue }
      return "this replica's conflict policy for \(entity) (\(own)) is not the hub's (\(recorded)); "
        + "every replica must be given the same policies; nothing was changed"
    }
    return nil
  }
}
