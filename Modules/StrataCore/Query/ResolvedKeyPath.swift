import Foundation

/// A dotted key path resolved against the model: the relationships it walks and what it reads at the end.
///
/// Backends use it to evaluate a key path without looking names up again: the in-memory evaluator walks
/// ``hops`` through snapshots, the SQL compiler turns to-one hops into `LEFT JOIN`s and a to-many hop into
/// an `EXISTS` subquery (or a join-table join).
///
/// ```swift
/// let path = try ResolvedKeyPath("director.movies.@count", entity: movie, model: model)
/// path.hops.map(\.relationship.name)   // ["director"]
/// path.terminal                        // .count(Director.movies)
/// path.isCollection                    // false: one count per movie
/// ```
///
/// Rules the evaluator follows and the SQL compiler must match:
/// - A nil to-one target on the way yields nil (for ``Terminal/count(_:)`` as well: `director.movies.@count`
///   is nil when `director` is nil).
/// - After a to-many hop, each target yields one element: what the rest of the path reads from it,
///   nil when a later to-one is nil. Two to-many hops flatten.
public struct ResolvedKeyPath: Sendable, Hashable, CustomStringConvertible {
  /// One relationship the key path walks before its terminal.
  public struct Hop: Sendable, Hashable {
    /// The entity the relationship belongs to.
    public let source: EntityDescription
    /// The relationship walked.
    public let relationship: RelationshipDescription
    /// The entity the relationship points at.
    public let destination: EntityDescription
    /// For a to-one relationship: its position in `source.toOneRelationships`, that is its index in
    /// `Snapshot.toOne` (StrataStoreKit). `nil` for a to-many relationship.
    public let toOneIndex: Int?

    /// Whether the hop crosses a to-many relationship (and so makes the key path a collection).
    public var isToMany: Bool { relationship.isToMany }
  }

  /// What the key path reads from the last entity it reaches (``ResolvedKeyPath/terminalEntity``).
  public enum Terminal: Sendable, Hashable {
    /// A stored attribute; `index` is its position in ``EntityDescription/attributes`` and `Snapshot.attributes`.
    case attribute(AttributeDescription, index: Int)
    /// A to-one relationship: the target's object ID (nil when unset). `index` is its `Snapshot.toOne` position.
    case toOne(RelationshipDescription, index: Int)
    /// A to-many relationship: the targets' object IDs, a collection.
    case toMany(RelationshipDescription)
    /// `rel.@count`: the number of targets of the to-many relationship (0 when it has none).
    case count(RelationshipDescription)
    /// `SELF`: the object ID of the object reached.
    case object
    /// `rel.attribute.@sum` (`@avg`, `@min`, `@max`): the aggregate of `attribute` over the targets of the
    /// to-many `rel`, nil elements skipped. Over no elements `@sum` is 0 and the others are nil.
    /// `index` is the attribute's position in the target's `Snapshot.attributes`.
    case aggregate(AggregateOperator, RelationshipDescription, AttributeDescription, index: Int)
    /// `rel[n].attribute`, `rel[LAST].attribute`: `attribute` of one target of the ordered to-many `rel`
    /// (`position` is `.index(n)` or `.last`), nil past the end of the list. `index` is the attribute's
    /// position in `Snapshot.attributes` of the object read: the target, or the one ``ResolvedKeyPath/elementHops``
    /// reach from it (`tracks[0].album.name`).
    case element(Member, RelationshipDescription, AttributeDescription, index: Int)
    /// `rel[n]`, `rel[LAST]` compared as an object: the object ID of one target of the ordered to-many
    /// `rel`, or of the object ``ResolvedKeyPath/elementHops`` reach from it (`tracks[0].album`); nil past
    /// the end of the list or when a to-one on the way is nil.
    ///
    /// ```swift
    /// try QueryPredicate(format: "tracks[FIRST] == %@", Value.objectID(opener))
    /// ```
    case elementObject(Member, RelationshipDescription)
  }

  /// A collection operator that folds the values of a to-many key path into one value.
  public enum AggregateOperator: String, Sendable, Hashable, CaseIterable {
    /// The total.
    case sum = "@sum"
    /// The arithmetic mean.
    case avg = "@avg"
    /// The smallest value.
    case min = "@min"
    /// The largest value.
    case max = "@max"

    /// The collection function that computes the same fold.
    public var function: CollectionFunction {
      switch self {
      case .sum: .sum
      case .avg: .average
      case .min: .min
      case .max: .max
      }
    }
  }

  /// What one value read by the key path is.
  public enum ValueKind: Sendable, Hashable {
    /// A value of an attribute of this type.
    case attribute(AttributeType)
    /// An object ID of this entity (a relationship target, or `SELF`).
    case objectID(entity: String)
    /// An integer count.
    case count

    /// A short description for error messages ("string", "object ID of Director", …).
    public var name: String {
      switch self {
      case .attribute(let type): type.rawValue
      case .objectID(let entity): "object ID of \(entity)"
      case .count: "count"
      }
    }
  }

  /// What a key path into a Codable attribute folds its array (or object) into: `tags.@count`,
  /// `scores.@sum`, `@avg`, `@min`, `@max`.
  public enum MemberFold: String, Sendable, Hashable, Codable, CaseIterable {
    /// The number of elements of an array (or keys of an object).
    case count = "@count"
    /// The total of an array's numbers.
    case sum = "@sum"
    /// The mean of an array's numbers.
    case avg = "@avg"
    /// The smallest element of an array.
    case min = "@min"
    /// The largest element of an array.
    case max = "@max"

    /// The collection function that computes the same fold.
    public var function: CollectionFunction {
      switch self {
      case .count: .count
      case .sum: .sum
      case .avg: .average
      case .min: .min
      case .max: .max
      }
    }
  }

  /// One step inside a Codable attribute's JSON: a key of an object, or an element of an array (a
  /// subscript: `stops[0]`, `tags[LAST]`; `[FIRST]` is `[0]`).
  ///
  /// ```swift
  /// let trip = try model.requireEntity("Trip")
  /// try ResolvedKeyPath("stops[0].city", entity: trip, model: model).members   // [.index(0), .key("city")]
  /// ```
  public enum Member: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The value of this key of an object (nil when missing or when the value is not an object).
    case key(String)
    /// The element at this position of an array, counted from 0 (nil past the end or when not an array).
    case index(Int)
    /// The last element of an array (nil when it is empty or not an array).
    case last

    /// The member as a key path writes it: `city`, `[0]`, `[LAST]`.
    public var description: String {
      switch self {
      case .key(let key): key
      case .index(let n): "[\(n)]"
      case .last: "[LAST]"
      }
    }

    /// The subscripts a key path component ends with (`tags[0][LAST]` → `("tags", [.index(0), .last])`);
    /// the component unchanged when it does not end with well-formed ones (`[n]` with `n` a non-negative
    /// integer, `[FIRST]`, `[LAST]`, any case).
    static func splitSubscripts(_ component: String) -> (name: String, subscripts: [Member]) {
      var name = Substring(component)
      var subscripts: [Member] = []
      while name.hasSuffix("]"), let open = name.lastIndex(of: "["), open != name.startIndex {
        let inside = name[name.index(after: open)..<name.index(before: name.endIndex)]
        let member: Member
        switch inside.uppercased() {
        case "FIRST": member = .index(0)
        case "LAST": member = .last
        default:
          guard !inside.isEmpty, inside.allSatisfy(\.isASCII), inside.allSatisfy(\.isNumber),
            let n = Int(inside)
          else { return (component, []) }
          member = .index(n)
        }
        subscripts.insert(member, at: 0)
        name = name[..<open]
      }
      return (String(name), subscripts)
    }
  }

  /// For a key path into a Codable (``AttributeType/json``) attribute: the members read inside its JSON
  /// after the attribute (`[.key("city")]` for `address.city`, `[.index(0), .key("city")]` for
  /// `stops[0].city`), empty otherwise.
  public private(set) var members: [Member] = []
  /// For a key path into a Codable attribute: the fold that ends it (`tags.@count`), if any.
  public private(set) var memberFold: MemberFold?
  /// For an element of an ordered relationship (``Terminal/element(_:_:_:index:)``,
  /// ``Terminal/elementObject(_:_:)``): the to-one relationships walked from the element before what the
  /// terminal reads (`[album]` for `tracks[0].album.name`), empty otherwise.
  ///
  /// ```swift
  /// let playlist = try model.requireEntity("Playlist")
  /// let path = try ResolvedKeyPath("tracks[0].album.name", entity: playlist, model: model)
  /// path.elementHops.map(\.relationship.name)   // ["album"]
  /// ```
  public private(set) var elementHops: [Hop] = []

  /// Whether the key path ends in a Codable (``AttributeType/json``) attribute or reads inside one;
  /// such a key path is compared by the rules of docs/QUERY-SEMANTICS.md, "Codable attributes".
  public var isJSON: Bool {
    if case .attribute(let attribute, _) = terminal { return attribute.type == .json }
    return false
  }

  /// Whether the key path reads the whole Codable attribute (no member, no fold).
  public var isWholeJSON: Bool { isJSON && members.isEmpty && memberFold == nil }

  /// The key path as written (without a leading `SELF.`).
  public let keyPath: String
  /// The entity the key path starts from.
  public let root: EntityDescription
  /// The relationships walked before the terminal, in order.
  public let hops: [Hop]
  /// What the key path reads at the end.
  public let terminal: Terminal

  /// The entity whose property ``terminal`` reads.
  public var terminalEntity: EntityDescription { hops.last?.destination ?? root }

  /// Whether the key path yields a collection (it crosses a to-many relationship or ends on one).
  /// A collection is compared element by element under `ANY`, `ALL` or `NONE`.
  public var isCollection: Bool {
    if case .toMany = terminal { return true }
    return hops.contains(where: \.isToMany)
  }

  /// The kind of each value the key path yields.
  public var valueKind: ValueKind {
    if memberFold == .count { return .count }
    return switch terminal {
    case .attribute(let a, _): .attribute(a.type)
    case .toOne(let rel, _), .toMany(let rel): .objectID(entity: rel.destination)
    case .count: .count
    case .object: .objectID(entity: terminalEntity.name)
    case .aggregate(let op, _, let a, _): Self.aggregateKind(op, a.type)
    case .element(_, _, let a, _): .attribute(a.type)
    case .elementObject(_, let rel): .objectID(entity: elementHops.last?.destination.name ?? rel.destination)
    }
  }

  /// What an aggregate of values of `type` yields: `@sum` an integer (or a double for floating point),
  /// `@avg` a double, `@min`/`@max` the type itself.
  static func aggregateKind(_ op: AggregateOperator, _ type: AttributeType) -> ValueKind {
    switch op {
    case .sum: .attribute(type.isInteger || type == .bool ? .int64 : .double)
    case .avg: .attribute(.double)
    case .min, .max: .attribute(type)
    }
  }

  public var description: String { "\(root.name).\(keyPath)" }

  /// The key path `SELF` of `entity`: the evaluated object's ID.
  public static func evaluatedObject(of entity: EntityDescription) -> ResolvedKeyPath {
    ResolvedKeyPath(keyPath: "SELF", root: entity, hops: [], terminal: .object)
  }

  private init(keyPath: String, root: EntityDescription, hops: [Hop], terminal: Terminal) {
    self.keyPath = keyPath
    self.root = root
    self.hops = hops
    self.terminal = terminal
  }

  /// The collection operators of NSPredicate that Strata does not evaluate yet.
  static let unsupportedCollectionOperators: Set<String> = [
    "@distinctUnionOfObjects", "@unionOfObjects", "@distinctUnionOfSets",
    "@unionOfSets", "@distinctUnionOfArrays", "@unionOfArrays",
  ]

  /// Resolves `keyPath` (`title`, `director.name`, `movies.@count`, `SELF`) from `entity`.
  ///
  /// `@sum`, `@avg`, `@min` and `@max` end a key path `toOne….toMany.attribute.@op`.
  ///
  /// - Throws: ``StoreError`` `.invalidQuery` naming the entity and key for an unknown key, a transient
  ///   attribute, a key path continuing past an attribute, a misplaced `@count`/`@sum`/…, or an aggregate
  ///   of an attribute it does not apply to (`@sum` of a string); `.unsupported` for the union operators
  ///   and aggregates of decimals.
  public init(_ keyPath: String, entity: EntityDescription, model: ObjectModel) throws {
    try QueryLimits.checkKeyPath(keyPath)
    if let dot = keyPath.lastIndex(of: "."),
      let op = AggregateOperator(rawValue: keyPath[keyPath.index(after: dot)...].lowercased())
    {
      try self.init(aggregate: op, of: String(keyPath[..<dot]), written: keyPath, entity: entity, model: model)
      return
    }
    var components = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    guard !keyPath.isEmpty, !components.contains(where: \.isEmpty) else {
      throw StoreError(.invalidQuery, "'\(keyPath)' is not a valid key path of \(entity.name)", entity: entity.name, key: keyPath)
    }
    if components.first?.uppercased() == "SELF" { components.removeFirst() }
    let written = components.isEmpty ? "SELF" : components.joined(separator: ".")
    let context = components.count > 1 ? " (in key path '\(written)' of \(entity.name))" : ""
    if let op = components.first(where: Self.unsupportedCollectionOperators.contains) {
      throw StoreError(
        .unsupported, "the collection operator \(op) is not supported in fetches yet\(context)",
        entity: entity.name, key: written)
    }
    var current = entity
    var hops: [Hop] = []
    var terminal = Terminal.object
    var members: [Member] = []
    var memberFold: MemberFold?
    var elementHops: [Hop] = []
    components: for (position, component) in components.enumerated() {
      let isLast = position == components.count - 1
      let (name, subscripts) = Member.splitSubscripts(component)
      if name.hasPrefix("@") {
        guard name == "@count" else {
          throw StoreError(.invalidQuery, "unknown collection operator \(name)\(context)", entity: entity.name, key: written)
        }
        guard isLast, let last = hops.last, last.isToMany else {
          throw StoreError(
            .invalidQuery, "@count must come last, right after a to-many relationship\(context)",
            entity: entity.name, key: written)
        }
        hops.removeLast()
        current = last.source
        terminal = .count(last.relationship)
        break
      }
      guard let property = current.property(named: name) else {
        throw StoreError(
          .invalidQuery, "\(current.name) has no attribute or relationship '\(name)'\(context)",
          entity: current.name, key: name)
      }
      switch property {
      case .attribute(let attribute, let index):
        if attribute.isTransient {
          throw StoreError(
            .invalidQuery,
            "\(current.name).\(name) is transient; transient attributes are not stored and cannot be used in a fetch",
            entity: current.name, key: name)
        }
        if attribute.type == .json, !isLast || !subscripts.isEmpty {
          terminal = .attribute(attribute, index: index)
          var rest = Array(components[(position + 1)...])
          if let last = rest.last, let fold = MemberFold(rawValue: last.lowercased()) {
            memberFold = fold
            rest.removeLast()
          }
          members = subscripts
          for member in rest {
            let (key, subscripts) = Member.splitSubscripts(member)
            members.append(.key(key))
            members += subscripts
          }
          if case .key(let bad)? = members.first(where: { if case .key(let k) = $0 { k.hasPrefix("@") } else { false } }) {
            throw StoreError(
              .invalidQuery,
              "\(bad) cannot be used inside the Codable attribute \(current.name).\(name); only @count, @sum, @avg, @min or @max may end the key path\(context)",
              entity: current.name, key: name)
          }
          if hops.contains(where: \.isToMany) {
            throw StoreError(
              .unsupported,
              "a key path into the Codable attribute \(current.name).\(name) after a to-many relationship is not supported\(context)",
              entity: current.name, key: name)
          }
          break components
        }
        guard subscripts.isEmpty else { throw Self.notSubscriptable(current, name, context) }
        guard isLast else {
          let next = components[position + 1]
          let message =
            next == "@count"
            ? "@count needs a to-many relationship, but \(current.name).\(name) is an attribute\(context)"
            : "\(current.name).\(name) is an attribute, so a key path cannot continue past it\(context)"
          throw StoreError(.invalidQuery, message, entity: current.name, key: name)
        }
        terminal = .attribute(attribute, index: index)
      case .toOne(let rel, let index):
        guard subscripts.isEmpty else { throw Self.notSubscriptable(current, name, context) }
        let destination = try Self.destination(of: rel, in: current, model: model)
        if isLast {
          terminal = .toOne(rel, index: index)
        } else {
          hops.append(Hop(source: current, relationship: rel, destination: destination, toOneIndex: index))
          current = destination
        }
      case .toMany(let rel):
        let destination = try Self.destination(of: rel, in: current, model: model)
        if rel.isOrdered, subscripts.count == 1, !hops.contains(where: \.isToMany) {
          // An element of an ordered relationship (`tracks[0]`), to-ones from it (`tracks[0].album`) and
          // maybe one attribute last (`tracks[0].album.name`).
          (elementHops, terminal) = try Self.elementPath(
            subscripts[0], rel, destination, rest: components[(position + 1)...], model: model, context: context)
          break components
        }
        guard subscripts.isEmpty else { throw Self.notSubscriptable(current, name, context) }
        if isLast {
          terminal = .toMany(rel)
        } else {
          hops.append(Hop(source: current, relationship: rel, destination: destination, toOneIndex: nil))
          current = destination
        }
      }
    }
    self.init(keyPath: written, root: entity, hops: hops, terminal: terminal)
    self.members = members
    self.memberFold = memberFold
    self.elementHops = elementHops
  }

  /// What follows an element of the ordered relationship `rel`: to-one relationships, then at most one
  /// stored attribute (`.element`), or nothing more (`.elementObject`, the object reached).
  private static func elementPath(
    _ position: Member, _ rel: RelationshipDescription, _ destination: EntityDescription, rest: ArraySlice<String>,
    model: ObjectModel, context: String
  ) throws -> ([Hop], Terminal) {
    var current = destination
    var hops: [Hop] = []
    for (offset, component) in rest.enumerated() {
      let isLast = offset == rest.count - 1
      let (name, subscripts) = Member.splitSubscripts(component)
      guard subscripts.isEmpty, !name.hasPrefix("@") else {
        throw StoreError(
          .unsupported,
          "'\(component)' after an element of the ordered relationship \(rel.name): a fetch reads an attribute or a to-one relationship of it\(context)",
          entity: current.name, key: name)
      }
      switch current.property(named: name) {
      case .attribute(let attribute, let index)?:
        guard isLast else {
          throw StoreError(
            .invalidQuery, "\(current.name).\(name) is an attribute, so a key path cannot continue past it\(context)",
            entity: current.name, key: name)
        }
        if attribute.isTransient || attribute.type == .json {
          let what = attribute.isTransient ? "transient (not stored)" : "a Codable attribute"
          throw StoreError(
            .unsupported, "\(current.name).\(name) is \(what) and cannot be read after an element of \(rel.name)\(context)",
            entity: current.name, key: name)
        }
        return (hops, .element(position, rel, attribute, index: index))
      case .toOne(let next, let index)?:
        let reached = try Self.destination(of: next, in: current, model: model)
        hops.append(Hop(source: current, relationship: next, destination: reached, toOneIndex: index))
        current = reached
      case .toMany(let next)?:
        throw StoreError(
          .unsupported,
          "the to-many relationship \(current.name).\(next.name) after an element of \(rel.name) is not supported in fetches; only to-one relationships and one attribute may follow an element\(context)",
          entity: current.name, key: next.name)
      case nil:
        throw StoreError(
          .invalidQuery, "\(current.name) has no attribute or relationship '\(name)'\(context)", entity: current.name,
          key: name)
      }
    }
    return (hops, .elementObject(position, rel))
  }

  private init(
    aggregate op: AggregateOperator, of base: String, written: String, entity: EntityDescription, model: ObjectModel
  ) throws {
    let path = try ResolvedKeyPath(base, entity: entity, model: model)
    let context = " (in key path '\(written)' of \(entity.name))"
    if path.isJSON, path.memberFold == nil, let fold = MemberFold(rawValue: op.rawValue) {
      self.init(keyPath: path.keyPath + "." + op.rawValue, root: entity, hops: path.hops, terminal: path.terminal)
      self.members = path.members
      self.memberFold = fold
      return
    }
    guard case .attribute(let attribute, let index) = path.terminal, let last = path.hops.last, last.isToMany,
      !path.hops.dropLast().contains(where: \.isToMany)
    else {
      throw StoreError(
        .invalidQuery, "\(op.rawValue) must follow a to-many relationship and one of its target's attributes\(context)",
        entity: entity.name, key: written)
    }
    let type = attribute.type
    if type == .decimal {
      throw StoreError(
        .unsupported,
        "\(op.rawValue) of the decimal attribute \(last.destination.name).\(attribute.name) is not supported\(context)",
        entity: last.destination.name, key: attribute.name)
    }
    let applies: Bool
    switch op {
    case .sum, .avg: applies = type.isNumeric
    case .min, .max: applies = type.isNumeric || type == .date || type == .string
    }
    guard applies else {
      throw StoreError(
        .invalidQuery,
        "\(op.rawValue) does not apply to \(last.destination.name).\(attribute.name), a \(type.rawValue)\(context)",
        entity: last.destination.name, key: attribute.name)
    }
    self.init(
      keyPath: path.keyPath + "." + op.rawValue, root: entity, hops: Array(path.hops.dropLast()),
      terminal: .aggregate(op, last.relationship, attribute, index: index))
  }

  /// The error for a subscript of a property that is not a Codable attribute.
  private static func notSubscriptable(_ entity: EntityDescription, _ name: String, _ context: String) -> StoreError {
    let what: String
    switch entity.property(named: name) {
    case .toMany(let rel)? where rel.isOrdered:
      what = "an ordered relationship, which takes one subscript and not after a to-many relationship"
    case .toMany?: what = "a to-many relationship, whose targets are a set (not ordered)"
    default: what = "not a collection"
    }
    return StoreError(
      .invalidQuery, "\(entity.name).\(name) is \(what), so it cannot be subscripted\(context)", entity: entity.name,
      key: name)
  }

  private static func destination(
    of rel: RelationshipDescription, in entity: EntityDescription, model: ObjectModel
  ) throws -> EntityDescription {
    guard let destination = model.entity(named: rel.destination) else {
      throw StoreError(
        .invalidQuery, "\(entity.name).\(rel.name) points at unknown entity '\(rel.destination)'",
        entity: entity.name, key: rel.name)
    }
    return destination
  }
}
