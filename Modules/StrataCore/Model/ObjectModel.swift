import Foundation

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
  /// Related objects stay; their inverse relationship stops pointing at the deleted object.
  case nullify
  /// Related objects are deleted too.
  case cascade
  /// The delete fails while any related object exists.
  case deny
  /// Nothing is done; the inverse is left pointing at a deleted object (a dangling reference).
  case noAction
}

/// Rules an attribute's value must satisfy when its object is saved.
public struct AttributeValidation: Sendable, Hashable, Codable {
  /// Smallest allowed number (numeric attributes) — inclusive.
  public var minimum: Double?
  /// Largest allowed number (numeric attributes) — inclusive.
  public var maximum: Double?
  /// Shortest allowed length in characters (string attributes).
  public var minimumLength: Int?
  /// Longest allowed length in characters (string attributes).
  public var maximumLength: Int?
  /// A regular expression the whole string must match (string attributes).
  public var pattern: String?

  /// Rules; each `nil` rule is not checked.
  public init(
    minimum: Double? = nil, maximum: Double? = nil, minimumLength: Int? = nil, maximumLength: Int? = nil,
    pattern: String? = nil
  ) {
    self.minimum = minimum
    self.maximum = maximum
    self.minimumLength = minimumLength
    self.maximumLength = maximumLength
    self.pattern = pattern
  }

  /// Whether no rule is set.
  public var isEmpty: Bool {
    minimum == nil && maximum == nil && minimumLength == nil && maximumLength == nil && pattern == nil
  }
}

/// One attribute of an entity.
///
/// ```swift
/// AttributeDescription(name: "title", type: .string)
/// AttributeDescription(name: "rating", type: .int16, defaultValue: 3,
///                      validation: .init(minimum: 0, maximum: 5))
/// ```
public struct AttributeDescription: Sendable, Hashable, Codable {
  /// The attribute's name, unique among the entity's attributes and relationships.
  public var name: String
  /// The type of the attribute's values.
  public var type: AttributeType
  /// Whether the attribute may hold `nil`.
  public var isOptional: Bool
  /// The value a new object starts with; `nil` means `nil` for optional attributes and the type's
  /// zero value for non-optional ones.
  public var defaultValue: Value?
  /// A transient attribute is tracked by contexts but never written to a store.
  public var isTransient: Bool
  /// A derivation expression (for example `canonical:(title)`, `list.name`, `items.@count`); the store
  /// computes the value whenever it writes (see ``DerivedAttributes`` for the supported forms). The app
  /// cannot set a derived attribute; until the first save it holds its initial value.
  public var derivation: String?
  /// Whether the store keeps an index on this attribute.
  public var isIndexed: Bool
  /// Whether persistent history keeps this attribute's value in the tombstone of a deleted object.
  public var preservesValueInHistoryOnDeletion: Bool
  /// The rules the value must satisfy when its object is saved.
  public var validation: AttributeValidation
  /// The name this attribute had in the previous model version, when it was renamed (Core Data's
  /// `renamingIdentifier`, SwiftData's `originalName`): migration moves the stored values over.
  public var renamingIdentifier: String?
  /// Whether a file store keeps large values of this `Data` attribute out of its rows (Core Data's
  /// `allowsExternalBinaryDataStorage`, SwiftData's `.externalStorage`): a value of at least
  /// ``externalStorageThreshold`` bytes goes to a file beside an SQLite or LMDB store
  /// (`<store>_SUPPORT/_EXTERNAL_DATA/`) or to a table of its own on PostgreSQL, written with the save;
  /// smaller values stay in the row. The memory store keeps every value in memory. An object reads a value
  /// kept out of its row the first time the attribute is read (fetching or faulting the object does not),
  /// and saving or copying carries the bytes; a predicate or sort on such an attribute compares what the
  /// row holds (the reference of a value kept out of it, never read for it), so only `== nil` and
  /// `!= nil` are meaningful. Only a stored,
  /// unindexed, non-derived `Data` attribute may allow it (else `.invalidModel`).
  /// Encoded only when `true`, so a model stored before the option existed decodes unchanged and keeps
  /// its ``ObjectModel/fingerprint``; turning it on is a model change that a migration carries.
  ///
  /// ```swift
  /// AttributeDescription(name: "poster", type: .data, isOptional: true, allowsExternalBinaryDataStorage: true)
  /// ```
  public var allowsExternalBinaryDataStorage: Bool

  /// The size, in bytes, from which a value of an attribute that ``allowsExternalBinaryDataStorage`` is
  /// kept out of the row: 100 KiB, about where SQLite's study "Internal Versus External BLOBs" finds a
  /// file beside the database faster to read than a BLOB in it (Core Data's threshold is about the same).
  public static let externalStorageThreshold = 100 * 1024

  /// An attribute; only `name` and `type` are required.
  public init(
    name: String, type: AttributeType, isOptional: Bool = false, defaultValue: Value? = nil,
    isTransient: Bool = false, derivation: String? = nil, isIndexed: Bool = false,
    preservesValueInHistoryOnDeletion: Bool = false, validation: AttributeValidation = .init(),
    renamingIdentifier: String? = nil, allowsExternalBinaryDataStorage: Bool = false
  ) {
    self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
    self.name = name
    self.type = type
    self.isOptional = isOptional
    self.defaultValue = defaultValue
    self.isTransient = isTransient
    self.derivation = derivation
    self.isIndexed = isIndexed
    self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
    self.validation = validation
    self.renamingIdentifier = renamingIdentifier
  }

  /// The value a newly inserted object holds for this attribute.
  public var initialValue: Value {
    if let defaultValue { return defaultValue }
    return isOptional ? .null : type.zeroValue
  }

  /// Whether the store keeps this attribute (it is neither transient nor computed by the context).
  public var isPersistent: Bool { !isTransient }

  private enum CodingKeys: String, CodingKey {
    case name, type, isOptional, defaultValue, isTransient, derivation, isIndexed
    case preservesValueInHistoryOnDeletion, validation, renamingIdentifier, allowsExternalBinaryDataStorage
  }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    name = try c.decode(String.self, forKey: .name)
    type = try c.decode(AttributeType.self, forKey: .type)
    isOptional = try c.decode(Bool.self, forKey: .isOptional)
    defaultValue = try c.decodeIfPresent(Value.self, forKey: .defaultValue)
    isTransient = try c.decode(Bool.self, forKey: .isTransient)
    derivation = try c.decodeIfPresent(String.self, forKey: .derivation)
    isIndexed = try c.decode(Bool.self, forKey: .isIndexed)
    preservesValueInHistoryOnDeletion = try c.decode(Bool.self, forKey: .preservesValueInHistoryOnDeletion)
    validation = try c.decode(AttributeValidation.self, forKey: .validation)
    renamingIdentifier = try c.decodeIfPresent(String.self, forKey: .renamingIdentifier)
    allowsExternalBinaryDataStorage =
      try c.decodeIfPresent(Bool.self, forKey: .allowsExternalBinaryDataStorage) ?? false
  }

  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(name, forKey: .name)
    try c.encode(type, forKey: .type)
    try c.encode(isOptional, forKey: .isOptional)
    try c.encodeIfPresent(defaultValue, forKey: .defaultValue)
    try c.encode(isTransient, forKey: .isTransient)
    try c.encodeIfPresent(derivation, forKey: .derivation)
    try c.encode(isIndexed, forKey: .isIndexed)
    try c.encode(preservesValueInHistoryOnDeletion, forKey: .preservesValueInHistoryOnDeletion)
    try c.encode(validation, forKey: .validation)
    try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
    if allowsExternalBinaryDataStorage { try c.encode(true, forKey: .allowsExternalBinaryDataStorage) }
  }
}

/// One relationship of an entity.
///
/// ```swift
/// RelationshipDescription(name: "director", destination: "Director", inverse: "movies")
/// RelationshipDescription(name: "movies", destination: "Movie", inverse: "director",
///                         isToMany: true, deleteRule: .cascade)
/// ```
public struct RelationshipDescription: Sendable, Hashable, Codable {
  /// The relationship's name, unique among the entity's attributes and relationships.
  public var name: String
  /// The entity at the other end.
  public var destination: String
  /// The relationship on the destination that points back, if any.
  public var inverse: String?
  /// Whether the relationship holds a set of targets rather than one.
  public var isToMany: Bool
  /// Whether a to-one relationship may be `nil` (to-many relationships may always be empty unless
  /// `minCount` says otherwise).
  public var isOptional: Bool
  /// What deleting the source does to the targets.
  public var deleteRule: DeleteRule
  /// Fewest targets a to-many relationship must hold on save (0 = no rule).
  public var minCount: Int
  /// Most targets a to-many relationship may hold on save (0 = no limit).
  public var maxCount: Int
  /// The name this relationship had in the previous model version, when it was renamed.
  public var renamingIdentifier: String?
  /// Whether a to-many relationship keeps its targets in an order (Core Data's `isOrdered`): an object
  /// appears once, stores keep the positions, and predicates may subscript it (`tracks[FIRST].title`).
  /// Only to-many relationships may be ordered. Encoded only when `true`, so a model stored before
  /// ordered relationships existed decodes unchanged and keeps its ``ObjectModel/fingerprint``.
  ///
  /// ```swift
  /// RelationshipDescription(name: "tracks", destination: "Track", inverse: "playlist",
  ///                         isToMany: true, isOrdered: true)
  /// ```
  public var isOrdered: Bool

  /// A relationship to `destination`; by default an optional to-one with the `nullify` rule.
  public init(
    name: String, destination: String, inverse: String? = nil, isToMany: Bool = false, isOptional: Bool = true,
    deleteRule: DeleteRule = .nullify, minCount: Int = 0, maxCount: Int = 0, renamingIdentifier: String? = nil,
    isOrdered: Bool = false
  ) {
    self.isOrdered = isOrdered
    self.name = name
    self.destination = destination
    self.inverse = inverse
    self.isToMany = isToMany
    self.isOptional = isOptional
    self.deleteRule = deleteRule
    self.minCount = minCount
    self.maxCount = maxCount
    self.renamingIdentifier = renamingIdentifier
  }

  private enum CodingKeys: String, CodingKey {
    case name, destination, inverse, isToMany, isOptional, deleteRule, minCount, maxCount, renamingIdentifier
    case isOrdered
  }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    name = try c.decode(String.self, forKey: .name)
    destination = try c.decode(String.self, forKey: .destination)
    inverse = try c.decodeIfPresent(String.self, forKey: .inverse)
    isToMany = try c.decode(Bool.self, forKey: .isToMany)
    isOptional = try c.decode(Bool.self, forKey: .isOptional)
    deleteRule = try c.decode(DeleteRule.self, forKey: .deleteRule)
    minCount = try c.decode(Int.self, forKey: .minCount)
    maxCount = try c.decode(Int.self, forKey: .maxCount)
    renamingIdentifier = try c.decodeIfPresent(String.self, forKey: .renamingIdentifier)
    isOrdered = try c.decodeIfPresent(Bool.self, forKey: .isOrdered) ?? false
  }

  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(name, forKey: .name)
    try c.encode(destination, forKey: .destination)
    try c.encodeIfPresent(inverse, forKey: .inverse)
    try c.encode(isToMany, forKey: .isToMany)
    try c.encode(isOptional, forKey: .isOptional)
    try c.encode(deleteRule, forKey: .deleteRule)
    try c.encode(minCount, forKey: .minCount)
    try c.encode(maxCount, forKey: .maxCount)
    try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
    if isOrdered { try c.encode(isOrdered, forKey: .isOrdered) }
  }
}

/// An entity: a named set of attributes and relationships, like a table or a class.
///
/// Lookups by name are precomputed, so an entity is immutable once built.
///
/// ```swift
/// let movie = EntityDescription(name: "Movie", attributes: [
///   AttributeDescription(name: "title", type: .string),
///   AttributeDescription(name: "releaseDate", type: .date),
/// ], uniquenessConstraints: [["title"]])
/// ```
public struct EntityDescription: Sendable, Codable {
  /// The entity's name, unique in its model.
  public let name: String
  /// Every attribute, in declaration order. Snapshots hold values in this order.
  public let attributes: [AttributeDescription]
  /// Every relationship, in declaration order.
  public let relationships: [RelationshipDescription]
  /// Sets of attributes whose combined values must be unique among the entity's objects.
  public let uniquenessConstraints: [[String]]
  /// Additional compound indexes (single-attribute ones can use `isIndexed`).
  public let indexes: [[String]]
  /// The name this entity had in the previous model version, when it was renamed.
  public let renamingIdentifier: String?
  /// The entity this one inherits from (Core Data's `superentity`), or `nil` for a root entity. In a
  /// model, an entity's inherited attributes and relationships come first in ``attributes`` and
  /// ``relationships``, in the parent's order, so a sub-entity's snapshot extends its parent's.
  public let parentEntity: String?
  /// Whether the entity has no objects of its own: only its sub-entities can be inserted (Core Data's
  /// `isAbstract`).
  public let isAbstract: Bool

  /// The to-one relationships in declaration order. Snapshots hold their targets in this order.
  public let toOneRelationships: [RelationshipDescription]
  /// The to-many relationships in declaration order.
  public let toManyRelationships: [RelationshipDescription]
  /// Where each attribute's value lies in the entity's ``AttributeValues``.
  public let valueLayout: AttributeLayout
  private let attributeIndexByName: [String: Int]
  private let toOneIndexByName: [String: Int]
  private let relationshipIndexByName: [String: Int]

  /// An entity. The model it is placed in checks it (names, inverses, constraints) and adds the
  /// properties, constraints and indexes a sub-entity inherits from `parentEntity`.
  ///
  /// ```swift
  /// let title = AttributeDescription(name: "title", type: .string)
  /// let runtime = AttributeDescription(name: "runtime", type: .int64)
  /// let media = EntityDescription(name: "Media", attributes: [title], isAbstract: true)
  /// let film = EntityDescription(name: "Film", attributes: [runtime], parentEntity: "Media")
  /// ```
  public init(
    name: String, attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = [],
    uniquenessConstraints: [[String]] = [], indexes: [[String]] = [], renamingIdentifier: String? = nil,
    parentEntity: String? = nil, isAbstract: Bool = false
  ) {
    self.name = name
    self.renamingIdentifier = renamingIdentifier
    self.parentEntity = parentEntity
    self.isAbstract = isAbstract
    self.attributes = attributes
    self.relationships = relationships
    self.uniquenessConstraints = uniquenessConstraints
    self.indexes = indexes
    self.toOneRelationships = relationships.filter { !$0.isToMany }
    self.toManyRelationships = relationships.filter(\.isToMany)
    self.valueLayout = AttributeLayout.of(attributes.map(\.type))
    self.attributeIndexByName = Dictionary(
      attributes.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    self.toOneIndexByName = Dictionary(
      toOneRelationships.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    self.relationshipIndexByName = Dictionary(
      relationships.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
  }

  /// A property of an entity found by name.
  public enum Property: Sendable, Hashable {
    /// An attribute and its position in ``EntityDescription/attributes``.
    case attribute(AttributeDescription, index: Int)
    /// A to-one relationship and its position in ``EntityDescription/toOneRelationships``.
    case toOne(RelationshipDescription, index: Int)
    /// A to-many relationship.
    case toMany(RelationshipDescription)
  }

  /// The attribute or relationship called `name`, or `nil`.
  public func property(named name: String) -> Property? {
    if let i = attributeIndexByName[name] { return .attribute(attributes[i], index: i) }
    if let i = relationshipIndexByName[name] {
      let rel = relationships[i]
      if rel.isToMany { return .toMany(rel) }
      if let j = toOneIndexByName[name] { return .toOne(rel, index: j) }
    }
    return nil
  }

  /// The position of the attribute called `name` in ``attributes``.
  public func attributeIndex(named name: String) -> Int? { attributeIndexByName[name] }

  /// The attribute called `name`.
  public func attribute(named name: String) -> AttributeDescription? {
    attributeIndexByName[name].map { attributes[$0] }
  }

  /// The position of the to-one relationship called `name` in ``toOneRelationships``.
  public func toOneIndex(named name: String) -> Int? { toOneIndexByName[name] }

  /// The relationship called `name`.
  public func relationship(named name: String) -> RelationshipDescription? {
    relationshipIndexByName[name].map { relationships[$0] }
  }

  /// The names of every attribute and relationship.
  public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }

  private enum CodingKeys: String, CodingKey {
    case name, attributes, relationships, uniquenessConstraints, indexes, renamingIdentifier, parentEntity, isAbstract
  }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      name: try c.decode(String.self, forKey: .name),
      attributes: try c.decodeIfPresent([AttributeDescription].self, forKey: .attributes) ?? [],
      relationships: try c.decodeIfPresent([RelationshipDescription].self, forKey: .relationships) ?? [],
      uniquenessConstraints: try c.decodeIfPresent([[String]].self, forKey: .uniquenessConstraints) ?? [],
      indexes: try c.decodeIfPresent([[String]].self, forKey: .indexes) ?? [],
      renamingIdentifier: try c.decodeIfPresent(String.self, forKey: .renamingIdentifier),
      parentEntity: try c.decodeIfPresent(String.self, forKey: .parentEntity),
      isAbstract: try c.decodeIfPresent(Bool.self, forKey: .isAbstract) ?? false)
  }

  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(name, forKey: .name)
    try c.encode(attributes, forKey: .attributes)
    try c.encode(relationships, forKey: .relationships)
    try c.encode(uniquenessConstraints, forKey: .uniquenessConstraints)
    try c.encode(indexes, forKey: .indexes)
    try c.encodeIfPresent(renamingIdentifier, forKey: .renamingIdentifier)
    try c.encodeIfPresent(parentEntity, forKey: .parentEntity)
    if isAbstract { try c.encode(isAbstract, forKey: .isAbstract) }
  }
}

extension EntityDescription: Hashable {
  public static func == (a: EntityDescription, b: EntityDescription) -> Bool {
    a.name == b.name && a.attributes == b.attributes && a.relationships == b.relationships
      && a.uniquenessConstraints == b.uniquenessConstraints && a.indexes == b.indexes
      && a.renamingIdentifier == b.renamingIdentifier && a.parentEntity == b.parentEntity
      && a.isAbstract == b.isAbstract
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(attributes)
    hasher.combine(relationships)
    hasher.combine(uniquenessConstraints)
    hasher.combine(indexes)
    hasher.combine(renamingIdentifier)
    hasher.combine(parentEntity)
    hasher.combine(isAbstract)
  }
}

/// The object model: every entity of an app, as plain data.
///
/// A model is `Codable` and stored inside every store, so tools can open a store without the app's code,
/// and its ``fingerprint`` tells whether a store was written with the same model.
///
/// ```swift
/// let model = try ObjectModel(entities: [movieEntity, directorEntity])
/// let movie = model.entity(named: "Movie")
/// ```
public struct ObjectModel: Sendable, Hashable, Codable {
  /// Every entity, in declaration order.
  public let entities: [EntityDescription]
  /// Named fetch requests stored with the model; their predicates may use `$VARIABLE`s.
  public let fetchRequestTemplates: [String: FetchDescription]
  /// The derived attributes of every entity, checked when the model was built (not encoded: it follows
  /// from `entities`).
  public private(set) var derivedAttributes = DerivedAttributes()
  /// The entity hierarchies: parents, sub-entities, abstract entities (not encoded: it follows from
  /// `entities`).
  public private(set) var inheritance = EntityInheritance()

  /// Creates a model and checks it: names unique and well formed, relationships pointing at existing
  /// entities with inverses that point back, constraints and indexes naming stored attributes,
  /// default values of the declared types, derivations that parse, have a supported form, read existing
  /// keys and fit their attribute's type.
  ///
  /// - Throws: ``StoreError`` with code `.invalidModel` naming the entity and key at fault.
  public init(entities: [EntityDescription], fetchRequestTemplates: [String: FetchDescription] = [:]) throws {
    self.entities = try Self.resolvingInheritance(entities)
    self.fetchRequestTemplates = fetchRequestTemplates
    inheritance = EntityInheritance(entities: self.entities)
    try validate()
    derivedAttributes = try DerivedAttributes(model: self)
  }

  /// The name the app gives this version of its model (see `MigrationPlan`). Stores keep it with the
  /// model, and `strata info` shows it; it is not part of the model's equality or ``fingerprint``, which
  /// describe its structure, so a store written before the app named its versions is still recognized.
  ///
  /// ```swift
  /// var model = try ObjectModel(Movie.self)
  /// model.versionName = "2"
  /// ```
  public var versionName: String?

  public static func == (a: ObjectModel, b: ObjectModel) -> Bool {
    a.entities == b.entities && a.fetchRequestTemplates == b.fetchRequestTemplates
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(entities)
    hasher.combine(fetchRequestTemplates)
  }

  private enum CodingKeys: String, CodingKey { case entities, fetchRequestTemplates, versionName }

  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(entities, forKey: .entities)
    try c.encode(fetchRequestTemplates, forKey: .fetchRequestTemplates)
    try c.encodeIfPresent(versionName, forKey: .versionName)
  }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    try self.init(
      entities: try c.decode([EntityDescription].self, forKey: .entities),
      fetchRequestTemplates: try c.decodeIfPresent([String: FetchDescription].self, forKey: .fetchRequestTemplates)
        ?? [:])
    versionName = try c.decodeIfPresent(String.self, forKey: .versionName)
  }

  /// The entity called `name`, or `nil`.
  public func entity(named name: String) -> EntityDescription? {
    entities.first { $0.name == name }
  }

  /// The entity called `name`.
  /// - Throws: ``StoreError`` `.invalidQuery` when there is no such entity.
  public func requireEntity(_ name: String) throws -> EntityDescription {
    guard let entity = entity(named: name) else {
      throw StoreError(
        .invalidQuery, "unknown entity '\(name)' (the model has: \(entities.map(\.name).joined(separator: ", ")))",
        entity: name)
    }
    return entity
  }

  /// The relationship at the other end of `relationship`, if it has an inverse.
  public func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
    guard let inverseName = relationship.inverse else { return nil }
    return entity(named: relationship.destination)?.relationship(named: inverseName)
  }

  /// Whether `relationship` is one side of a many-to-many pair.
  public func isManyToMany(_ relationship: RelationshipDescription) -> Bool {
    relationship.isToMany && (inverse(of: relationship)?.isToMany ?? false)
  }

  /// Whether a to-many relationship is stored as rows of a join table: many-to-many pairs and to-many
  /// relationships without an inverse. (A to-many whose inverse is to-one is stored as the inverse's
  /// foreign key instead.)
  public func usesJoinTable(_ relationship: RelationshipDescription) -> Bool {
    guard relationship.isToMany else { return false }
    guard let inverse = inverse(of: relationship) else { return true }
    return inverse.isToMany
  }

  /// The side that owns the join table of a join-table relationship: for a many-to-many pair, the one
  /// whose `Entity.relationship` name sorts first; otherwise the relationship itself. Link rows are
  /// stored as (owner source, owner target).
  public func joinTableOwner(
    of entityName: String, _ relationship: RelationshipDescription
  )
    -> (entity: String, relationship: String, isFlipped: Bool)
  {
    let entityName = declaringEntity(of: relationship.name, in: entityName)
    if let inverse = inverse(of: relationship), inverse.isToMany,
      "\(relationship.destination).\(inverse.name)" < "\(entityName).\(relationship.name)"
    {
      return (relationship.destination, inverse.name, true)
    }
    return (entityName, relationship.name, false)
  }

  /// A stable hash of the model's content, written as 16 hex digits. Two models with the same
  /// entities, properties and options have the same fingerprint.
  public var fingerprint: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    var structure = self
    structure.versionName = nil
    let data = (try? encoder.encode(structure)) ?? Data()
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in data {
      hash ^= UInt64(byte)
      hash = hash &* 0x100_0000_01b3
    }
    return String(format: "%016llx", hash)
  }

  /// The model as JSON with sorted keys (what stores keep inside the file).
  public func jsonData() throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(self)
  }

  /// Decodes a model stored by ``jsonData()``.
  /// - Throws: ``StoreError`` `.corrupted` when the data is not a model.
  public static func decode(jsonData data: Data) throws -> ObjectModel {
    do {
      return try JSONDecoder().decode(ObjectModel.self, from: data)
    } catch let error as StoreError {
      throw error
    } catch let error as DecodingError {
      throw StoreError(.corrupted, "the stored object model cannot be read: \(describe(error))")
    } catch {
      throw StoreError(.corrupted, "the stored object model cannot be read: \(error)")
    }
  }

  /// A decoding error in one short line: what is wrong, and where in the model.
  private static func describe(_ error: DecodingError) -> String {
    func place(_ path: [any CodingKey]) -> String {
      path.isEmpty ? "the top level" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
    switch error {
    case .dataCorrupted(let context) where context.codingPath.isEmpty:
      return "it is not valid JSON (empty, truncated or damaged)"
    case .dataCorrupted(let context):
      return "\(place(context.codingPath)) is damaged"
    case .keyNotFound(let key, let context):
      return "\(place(context.codingPath)) has no '\(key.stringValue)' (it is not a model)"
    case .typeMismatch(let type, let context):
      return "\(place(context.codingPath)) is not a \(type) (it is not a model)"
    case .valueNotFound(let type, let context):
      return "\(place(context.codingPath)) holds no \(type)"
    @unknown default:
      return "it is not a model"
    }
  }

  private func validate() throws {
    func invalid(_ message: String, _ entity: String? = nil, _ key: String? = nil) -> StoreError {
      StoreError(.invalidModel, "invalid model: \(message)", entity: entity, key: key)
    }
    func checkName(_ name: String, _ what: String, entity: String? = nil) throws {
      let ok =
        !name.isEmpty && !name.hasPrefix("_") && name.first.map { $0.isLetter } == true
        && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
      if !ok {
        throw invalid(
          "\(what) name '\(name)' must start with a letter and hold only letters, digits and _",
          entity, entity == nil ? nil : name)
      }
    }
    var seenEntities = Set<String>()
    for entity in entities {
      try checkName(entity.name, "entity")
      guard seenEntities.insert(entity.name).inserted else {
        throw invalid("entity '\(entity.name)' is declared twice", entity.name)
      }
      var seen = Set<String>()
      for name in entity.propertyNames {
        try checkName(name, "property", entity: entity.name)
        guard seen.insert(name).inserted else {
          throw invalid("\(entity.name).\(name) is declared twice", entity.name, name)
        }
      }
      for attribute in entity.attributes {
        if let value = attribute.defaultValue, attribute.type.coerce(value) == nil {
          throw invalid(
            "default value \(value) of \(entity.name).\(attribute.name) is not a \(attribute.type.rawValue)",
            entity.name, attribute.name)
        }
        if attribute.defaultValue == .null && !attribute.isOptional {
          throw invalid(
            "\(entity.name).\(attribute.name) is not optional but its default value is nil", entity.name, attribute.name)
        }
        if attribute.allowsExternalBinaryDataStorage
          && (attribute.type != .data || attribute.isTransient || attribute.derivation != nil || attribute.isIndexed)
        {
          throw invalid(
            "\(entity.name).\(attribute.name) allows external storage, which only a stored, unindexed Data attribute may",
            entity.name, attribute.name)
        }
      }
      for keys in entity.uniquenessConstraints + entity.indexes {
        if keys.isEmpty { throw invalid("\(entity.name) has an empty uniqueness constraint or index", entity.name) }
        for key in keys {
          switch entity.property(named: key) {
          case .attribute(let a, _) where a.isPersistent && !a.allowsExternalBinaryDataStorage: break
          case .toOne: break
          default:
            throw invalid(
              "constraint or index of \(entity.name) names '\(key)', which is not a stored attribute or to-one relationship",
              entity.name, key)
          }
        }
      }
    }
    for entity in entities {
      for rel in entity.relationships {
        guard let destination = self.entity(named: rel.destination) else {
          throw invalid("\(entity.name).\(rel.name) points at unknown entity '\(rel.destination)'", entity.name, rel.name)
        }
        if let inverseName = rel.inverse {
          guard let inverse = destination.relationship(named: inverseName) else {
            throw invalid(
              "the inverse of \(entity.name).\(rel.name) is '\(inverseName)', which \(destination.name) does not have",
              entity.name, rel.name)
          }
          guard isEntity(entity.name, kindOf: inverse.destination), inverse.inverse == rel.name else {
            throw invalid(
              "\(destination.name).\(inverseName) must point back at \(entity.name).\(rel.name)",
              entity.name, rel.name)
          }
        }
        if rel.isOrdered && !rel.isToMany {
          throw invalid(
            "\(entity.name).\(rel.name) is ordered but to-one: only to-many relationships may be ordered",
            entity.name, rel.name)
        }
        if rel.minCount < 0 || rel.maxCount < 0 || (rel.maxCount > 0 && rel.minCount > rel.maxCount) {
          throw invalid("\(entity.name).\(rel.name) has an impossible count range", entity.name, rel.name)
        }
      }
    }
    for (name, template) in fetchRequestTemplates where entity(named: template.entityName) == nil {
      throw invalid("fetch request template '\(name)' names unknown entity '\(template.entityName)'")
    }
  }
}
