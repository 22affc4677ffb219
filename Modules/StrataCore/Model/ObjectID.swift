import Foundation
import Synchronization

/// The identity of one object in a store: its entity and a key the store assigned.
///
/// An object inserted into a context has a *temporary* ID until the context saves; the save replaces it
/// with a *permanent* ID that the store assigned. IDs are `Sendable`: pass them between contexts and
/// tasks, then look the object up with `context.object(with:)`.
///
/// ```swift
/// let id = movie.objectID            // strata://3F2…/Movie/p12
/// let again = try background.existingObject(with: id)
/// ```
public struct ObjectID: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The entity name and store identifier, shared by every ID of one entity in one store. Interned, so
  /// IDs compare scopes by identity and an ID stays 24 bytes: it keys the dictionaries of every save.
  @usableFromInline
  final class Scope: Sendable {
    let entityName: String
    let storeIdentifier: String

    private init(entityName: String, storeIdentifier: String) {
      self.entityName = entityName
      self.storeIdentifier = storeIdentifier
    }

    private struct Key: Hashable, Sendable {
      let entityName: String
      let storeIdentifier: String
    }

    private static let interned = Locked<[Key: Scope]>([:])

    static func of(entityName: String, storeIdentifier: String) -> Scope {
      let key = Key(entityName: entityName, storeIdentifier: storeIdentifier)
      return interned.withLock { table in
        if let scope = table[key] { return scope }
        let scope = Scope(entityName: entityName, storeIdentifier: storeIdentifier)
        table[key] = scope
        return scope
      }
    }
  }

  /// Interned scopes live as long as the process (the table keeps them), so the reference needs no
  /// counting: copying, hashing and comparing IDs — what every registry and save does most — costs no
  /// retain or release.
  @usableFromInline let internedScope: ImmortalReference<Scope>
  @inlinable var scope: Scope { internedScope.object }
  /// The key: the store's primary key, or a process-unique number for a temporary ID.
  public let key: Key

  /// The name of the entity the object belongs to.
  public var entityName: String { scope.entityName }
  /// The identifier of the store that assigned the key; empty for a temporary ID.
  public var storeIdentifier: String { scope.storeIdentifier }

  /// A store-assigned primary key or a temporary number.
  public enum Key: Sendable, Hashable, Codable {
    /// A primary key the store assigned; the object is saved.
    case permanent(Int64)
    /// A number a context gave an object it has not saved yet.
    case temporary(UInt64)
  }

  /// Creates a permanent ID. Backends call this when they assign a primary key.
  public init(entityName: String, storeIdentifier: String, primaryKey: Int64) {
    self.internedScope = ImmortalReference(Scope.of(entityName: entityName, storeIdentifier: storeIdentifier))
    self.key = .permanent(primaryKey)
  }

  private init(scope: Scope, key: Key) {
    self.internedScope = ImmortalReference(scope)
    self.key = key
  }

  /// A permanent ID of the same entity and store with another primary key. Cheaper than
  /// ``init(entityName:storeIdentifier:primaryKey:)``, which looks the entity and store up, for a store
  /// naming many rows of one table.
  public func withPrimaryKey(_ primaryKey: Int64) -> ObjectID {
    ObjectID(scope: scope, key: .permanent(primaryKey))
  }

  /// Whether `other` names an object of the same entity in the same store (or is temporary like this
  /// one): a comparison of one word, where comparing ``entityName`` and ``storeIdentifier`` compares text.
  ///
  /// ```swift
  /// if heatID.hasSameEntityAndStore(as: roninID) { … }
  /// ```
  @inlinable
  public func hasSameEntityAndStore(as other: ObjectID) -> Bool {
    scope === other.scope
  }

  private init(entityName: String, temporary: UInt64) {
    self.internedScope = ImmortalReference(Scope.of(entityName: entityName, storeIdentifier: ""))
    self.key = .temporary(temporary)
  }

  private enum CodingKeys: String, CodingKey { case entityName, storeIdentifier, key }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    internedScope = ImmortalReference(
      Scope.of(
        entityName: try c.decode(String.self, forKey: .entityName),
        storeIdentifier: try c.decode(String.self, forKey: .storeIdentifier)))
    key = try c.decode(Key.self, forKey: .key)
  }

  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(entityName, forKey: .entityName)
    try c.encode(storeIdentifier, forKey: .storeIdentifier)
    try c.encode(key, forKey: .key)
  }

  private static let temporaryCounter = Atomic<UInt64>(0)

  /// Creates a new temporary ID, unique within this process.
  public static func makeTemporary(entityName: String) -> ObjectID {
    let n = temporaryCounter.add(1, ordering: .relaxed).newValue
    return ObjectID(entityName: entityName, temporary: n)
  }

  /// A new temporary ID of the same entity as `self`, without looking the entity up: for code that makes
  /// many objects of one entity.
  ///
  /// ```swift
  /// let template = ObjectID.makeTemporary(entityName: "Movie")
  /// let next = template.nextTemporary()
  /// ```
  public func nextTemporary() -> ObjectID {
    let n = Self.temporaryCounter.add(1, ordering: .relaxed).newValue
    return isTemporary ? ObjectID(scope: scope, key: .temporary(n)) : ObjectID(entityName: entityName, temporary: n)
  }

  /// Whether the ID is temporary (the object has not been saved yet).
  public var isTemporary: Bool {
    if case .temporary = key { return true }
    return false
  }

  /// The store's primary key for a permanent ID, `nil` for a temporary one.
  public var primaryKey: Int64? {
    if case .permanent(let pk) = key { return pk }
    return nil
  }

  /// A URI naming the object: `strata://STORE/Entity/pKEY`, or `strata:///Entity/tN` when temporary.
  public var uriRepresentation: String {
    switch key {
    case .permanent(let pk): "strata://\(storeIdentifier)/\(entityName)/p\(pk)"
    case .temporary(let n): "strata:///\(entityName)/t\(n)"
    }
  }

  /// Parses a permanent ID from its URI representation; `nil` when the string is not one.
  public init?(uriRepresentation uri: String) {
    let prefix = "strata://"
    guard uri.hasPrefix(prefix) else { return nil }
    let parts = uri.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, parts[2].first == "p",
      let pk = Int64(parts[2].dropFirst()), pk > 0
    else { return nil }
    self.init(entityName: String(parts[1]), storeIdentifier: String(parts[0]), primaryKey: pk)
  }

  public var description: String { uriRepresentation }

  // Inlinable, as is the hash: dictionaries keyed by IDs compare and hash them for every lookup.
  @inlinable
  public static func == (a: ObjectID, b: ObjectID) -> Bool {
    a.key == b.key && a.scope === b.scope
  }

  /// Hashes the key alone: it is what differs between IDs of one store, and hashing the store's UUID
  /// string on every dictionary operation costs more than the rare collision across entities.
  public func hash(into hasher: inout Hasher) {
    switch key {
    case .permanent(let pk): hasher.combine(pk)
    case .temporary(let n): hasher.combine(~n)
    }
  }

  /// What dictionaries and sets hash: ``bucketHash(seed:)``. Public only because it is `Hashable`'s
  /// (underscored) requirement; call ``bucketHash(seed:)``.
  @inlinable
  public func _rawHashValue(seed: Int) -> Int { bucketHash(seed: seed) }

  /// What dictionaries and sets hash, instead of a full `Hasher` run per lookup: registries and saves
  /// look IDs up by the hundred thousand, and keys are store-assigned numbers, not attacker-chosen text.
  ///
  /// The key's high bits, mixed with the table's seed by a 64-bit finalizer (``SplitMix64/mix(_:)``), pick
  /// a block of 8 buckets; its low three bits, flipped by the mixed bits, pick the bucket in the block.
  /// Keys are handed out in sequence, so the objects of one fetch or save fill neighbouring buckets: a
  /// table of 100,000 IDs costs a cache miss per block rather than per lookup. Keys of any stride still
  /// spread over every bucket: keys that share their low bits differ in the mixed bits that flip them.
  /// Blocks are small because runs of keys whose blocks meet probe past each other: in a fetch of 20,000
  /// objects, blocks of 16 made twice the key comparisons of blocks of 8.
  @inlinable
  package func bucketHash(seed: Int) -> Int {
    let x: UInt64
    switch key {
    case .permanent(let pk): x = UInt64(bitPattern: pk)
    case .temporary(let n): x = ~n
    }
    let mixed = SplitMix64.mix((x >> 3) ^ UInt64(bitPattern: Int64(seed)))
    return Int(bitPattern: UInt(truncatingIfNeeded: mixed ^ (x & 7)))
  }
}
