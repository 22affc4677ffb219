import Foundation

/// The derived attributes of a model: attributes whose value a store computes from a derivation
/// expression every time it writes, instead of taking it from the app.
///
/// Supported derivations (each reads at most one relationship, which must have an inverse, so a store can
/// find what to recompute when the other side changes):
/// - a copy of an attribute, of the object itself (`title`) or through a to-one relationship (`list.name`);
/// - `lowercase:(k)`, `uppercase:(k)`, `canonical:(k)` (case and diacritics folded) of such a string;
/// - `items.@count`, and `items.price.@sum` (`@avg`, `@min`, `@max`) over a to-many relationship;
/// - `now()`: the time of the last save that wrote the object.
///
/// A derivation may not read another derived attribute. The result must fit the attribute's type
/// (numbers convert to any numeric type, whole-number types truncating); a nil result is stored as nil in
/// an optional attribute and as the type's zero value otherwise.
///
/// The model checks its derivations when it is built and keeps the result in
/// ``ObjectModel/derivedAttributes``; stores compute the values with `DerivedRecomputation` (StrataStoreKit).
///
/// ```swift
/// let list = EntityDescription(name: "TodoList", attributes: [
///   AttributeDescription(name: "name", type: .string),
///   AttributeDescription(name: "nameKey", type: .string, derivation: "canonical:(name)"),
/// ])
/// let model = try ObjectModel(entities: [list])
/// model.derivedAttributes.derivations(of: "TodoList").map(\.attribute.name)   // ["nameKey"]
/// ```
public struct DerivedAttributes: Sendable {
  /// One derived attribute of an entity.
  public struct Derivation: Sendable {
    /// The entity the attribute belongs to.
    public let entity: EntityDescription
    /// The attribute's position in ``EntityDescription/attributes``.
    public let index: Int
    /// The derived attribute itself (its ``AttributeDescription/derivation`` is the expression's source).
    public let attribute: AttributeDescription
    /// The derivation as parsed (`now()` not yet replaced by a date).
    package let expression: QueryExpression
    /// What the derivation reads beyond the object's own attributes.
    package let reach: Reach
  }

  /// What a derivation reads beyond the object's own attributes.
  package enum Reach: Sendable {
    /// Nothing: only the object's own attributes.
    case own
    /// The clock (`now()`).
    case clock
    /// `keys` of the objects `relationship` leads to; `inverse` leads back from them. For a to-many
    /// relationship `keys` holds the inverse too: moving a target changes the count or fold.
    case related(relationship: RelationshipDescription, inverse: RelationshipDescription, keys: Set<String>)
  }

  /// A derivation that reads objects of another entity, seen from that entity.
  package struct Watch: Sendable {
    /// The derivation's entity and relationship (`TodoList.items`).
    package let entity: String
    package let relationship: RelationshipDescription
    /// The relationship leading from a watched object back to the objects to recompute (`TodoItem.list`).
    package let inverse: RelationshipDescription
    /// The watched object's keys whose change makes the derivation change (`list`, `price`).
    package let keys: Set<String>
  }

  private let byEntity: [String: [Derivation]]
  /// Derivations reading objects of an entity, by that entity's name.
  package let watches: [String: [Watch]]

  /// No derived attributes.
  init() {
    byEntity = [:]
    watches = [:]
  }

  /// Reads and checks every derivation of `model`.
  ///
  /// - Throws: ``StoreError`` `.invalidModel` naming the entity and attribute of a derivation that does not
  ///   parse, has an unsupported form, names a key that does not exist, reads a derived or transient
  ///   attribute, goes through a relationship without an inverse, or yields a value the attribute's type
  ///   cannot hold.
  init(model: ObjectModel) throws {
    var byEntity: [String: [Derivation]] = [:]
    var watches: [String: [Watch]] = [:]
    for entity in model.entities {
      for (index, attribute) in entity.attributes.enumerated() {
        guard let text = attribute.derivation else { continue }
        let derivation = try Self.derivation(text, of: attribute, index: index, in: entity, model: model)
        byEntity[entity.name, default: []].append(derivation)
        if case .related(let rel, let inverse, let keys) = derivation.reach {
          // A relationship to a parent entity holds objects of its sub-entities: each of them is watched.
          for destination in model.inheritance.entityAndDescendants(rel.destination) {
            watches[destination, default: []].append(
              Watch(entity: entity.name, relationship: rel, inverse: inverse, keys: keys))
          }
        }
      }
    }
    self.byEntity = byEntity
    self.watches = watches
  }

  /// Whether the model has no derived attribute.
  public var isEmpty: Bool { byEntity.isEmpty }

  /// The derived attributes of the entity called `entityName`, in declaration order.
  public func derivations(of entityName: String) -> [Derivation] { byEntity[entityName] ?? [] }

  /// Whether objects of the entity called `entityName` have derived attributes or are read by one.
  package func isInvolved(_ entityName: String) -> Bool {
    byEntity[entityName] != nil || watches[entityName] != nil
  }

  /// Whether setting `keys` of objects of `entityName` without a save (a store's native batch update)
  /// would leave a derived attribute stale: the entity has derived attributes, or a derivation of another
  /// object reads one of the keys.
  ///
  /// ```swift
  /// let derived = model.derivedAttributes
  /// derived.isAffected(byUpdating: ["price"], of: "TodoItem")   // true: TodoList.total reads it
  /// ```
  public func isAffected(byUpdating keys: some Sequence<String>, of entityName: String) -> Bool {
    if byEntity[entityName] != nil { return true }
    guard let watching = watches[entityName] else { return false }
    let keys = Set(keys)
    return watching.contains { !$0.keys.isDisjoint(with: keys) }
  }

  // MARK: Checking one derivation

  private static func derivation(
    _ text: String, of attribute: AttributeDescription, index: Int, in entity: EntityDescription, model: ObjectModel
  ) throws -> Derivation {
    func invalid(_ problem: String) -> StoreError {
      StoreError(
        .invalidModel, "invalid model: the derivation '\(text)' of \(entity.name).\(attribute.name) \(problem)",
        entity: entity.name, key: attribute.name)
    }
    if attribute.isTransient { throw invalid("is on a transient attribute; derived attributes are stored") }
    let expression: QueryExpression
    do {
      expression = try QueryExpression(format: text)
    } catch {
      throw invalid("does not parse: \(Self.message(of: error))")
    }
    let reach: Reach
    switch expression {
    case .function("now", let arguments) where arguments.isEmpty:
      reach = .clock
    case .function(let name, let arguments) where ExpressionFunctions.stringFunctions.contains(name) && arguments.count == 1:
      guard case .keyPath(let keyPath) = arguments[0] else {
        throw invalid("must apply \(name) to an attribute, as in \(name)(title)")
      }
      reach = try Self.reach(of: keyPath, allowingCollections: false, in: entity, model: model, invalid)
    case .keyPath(let keyPath):
      reach = try Self.reach(of: keyPath, allowingCollections: true, in: entity, model: model, invalid)
    default:
      throw invalid(
        "is not supported; use an attribute (name, list.name), lowercase:, uppercase: or canonical: of one, "
          + "items.@count, items.price.@sum (@avg, @min, @max) or now()")
    }
    let kind: ResolvedKeyPath.ValueKind?
    do {
      kind = try QueryValidator.checkExpression(expression, entity: entity, model: model).1
    } catch {
      throw invalid("cannot be computed: \(Self.message(of: error))")
    }
    guard Self.fits(kind, attribute.type) else {
      throw invalid("yields a \(kind?.name ?? "nil"), which a \(attribute.type.rawValue) attribute cannot hold")
    }
    return Derivation(entity: entity, index: index, attribute: attribute, expression: expression, reach: reach)
  }

  /// What the key path `keyPath` of a derivation reads, or an error when it is not a supported form.
  private static func reach(
    of keyPath: String, allowingCollections: Bool, in entity: EntityDescription, model: ObjectModel,
    _ invalid: (String) -> StoreError
  ) throws -> Reach {
    let path: ResolvedKeyPath
    do {
      path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
    } catch {
      throw invalid("reads '\(keyPath)': \(Self.message(of: error))")
    }
    let relationship: RelationshipDescription
    let keys: Set<String>
    switch (path.hops.count, path.terminal) {
    case (0, .attribute(let attribute, _)):
      try requireUnderived(attribute, of: entity, invalid)
      return .own
    case (1, .attribute(let attribute, _)) where !path.hops[0].isToMany:
      try requireUnderived(attribute, of: path.hops[0].destination, invalid)
      relationship = path.hops[0].relationship
      keys = [attribute.name]
    case (0, .count(let rel)) where allowingCollections:
      relationship = rel
      keys = [rel.inverse ?? ""]
    case (0, .aggregate(_, let rel, let attribute, _)) where allowingCollections:
      try requireUnderived(attribute, of: model.entity(named: rel.destination) ?? entity, invalid)
      relationship = rel
      keys = [attribute.name, rel.inverse ?? ""]
    default:
      throw invalid(
        "reads '\(keyPath)'; a derivation reads an attribute of the object or of a to-one target (list.name), "
          + "or counts or folds a to-many relationship (items.@count, items.price.@sum)")
    }
    guard let inverse = model.inverse(of: relationship) else {
      throw invalid(
        "reads through \(entity.name).\(relationship.name), which has no inverse; the store needs it to find what to recompute")
    }
    return .related(relationship: relationship, inverse: inverse, keys: keys)
  }

  private static func requireUnderived(
    _ attribute: AttributeDescription, of entity: EntityDescription, _ invalid: (String) -> StoreError
  ) throws {
    guard let other = entity.attribute(named: attribute.name), other.derivation == nil else {
      throw invalid("reads \(entity.name).\(attribute.name), which is derived itself; derive from stored attributes")
    }
  }

  /// Whether a value of `kind` can be stored in a `type` attribute.
  static func fits(_ kind: ResolvedKeyPath.ValueKind?, _ type: AttributeType) -> Bool {
    switch kind {
    case .attribute(let produced)?: produced == type || (produced.isNumeric && type.isNumeric)
    case .count?: type.isNumeric
    case .objectID?, nil: false
    }
  }

  private static func message(of error: any Error) -> String {
    (error as? StoreError)?.message ?? "\(error)"
  }
}
