import Foundation

/// One row of a batch insert checked against the model: every attribute value (given, defaulted or nil),
/// aligned with the entity's attributes, and which attributes the row gave.
///
/// ```swift
/// let row = try BatchInsertRow(["name": "Ghibli"], index: 0, rules: BatchInsertRow.Rules(studio))
/// row.given   // the position of "name" in studio.attributes
/// ```
public struct BatchInsertRow: Sendable {
  /// Every attribute value, aligned with `EntityDescription.attributes`: the row's value converted to
  /// the attribute's type, else the default, else nil (derived and transient attributes hold their
  /// initial value; the store computes derived ones).
  public var values: AttributeValues
  /// The positions of the attributes the row gave, in ascending order.
  public var given: [Int]

  /// What every row of one entity is checked against, worked out once per batch.
  public final class Rules: Sendable {
    let entity: EntityDescription
    /// The positions of the attributes a row must give: stored, settable, non-optional, without a default.
    let required: [Int]
    let initialValues: AttributeValues
    /// Aligned with the entity's attributes, so that rows are checked without copying descriptions.
    let names: [String]
    /// Each name's UTF-8 length and first byte: most names are told apart without comparing them.
    let signatures: [Int]
    /// The two words of each name, one name after another, for ``position(of:)``.
    let rawNames: [UInt64]
    /// What a row's value of each attribute is checked against, in one plain array.
    let attributeRules: [AttributeRule]

    struct AttributeRule {
      let type: AttributeType
      let isOptional: Bool
      let isRequired: Bool
      let isSettable: Bool
    }

    /// The rules of `entity`'s attributes.
    public init(_ entity: EntityDescription) {
      self.entity = entity
      required = entity.attributes.indices.filter {
        let attribute = entity.attributes[$0]
        return !attribute.isOptional && attribute.defaultValue == nil && !attribute.isTransient && attribute.derivation == nil
      }
      var isRequired = [Bool](repeating: false, count: entity.attributes.count)
      for position in required { isRequired[position] = true }
      initialValues = AttributeValues(entity.attributes.map(\.initialValue), layout: entity.valueLayout)
      names = entity.attributes.map(\.name)
      signatures = entity.attributes.map { Rules.signature($0.name) }
      attributeRules = entity.attributes.enumerated().map { position, attribute in
        AttributeRule(
          type: attribute.type, isOptional: attribute.isOptional, isRequired: isRequired[position],
          isSettable: !attribute.isTransient && attribute.derivation == nil)
      }
      rawNames = entity.attributes.flatMap {
        let words = stringWords($0.name)
        return [words.0, words.1]
      }
    }

    @inline(__always)
    static func signature(_ name: String) -> Int {
      name.utf8.count << 8 | Int(name.utf8.first ?? 0)
    }

    /// The position of the attribute `name`. Names are short and usually stored inline, so the same
    /// name has the same bits: a scan comparing those finds most keys without hashing or comparing text.
    @inline(__always)
    func position(of name: String) -> Int? {
      let bits = stringWords(name)
      // Every name is compared, without a branch per name: which one matches differs from key to key,
      // and a mispredicted early exit costs more than the few comparisons it saves.
      let found = rawNames.withUnsafeBufferPointer { words in
        var found = 0
        for i in 0..<(words.count / 2) {
          let difference = (words[2 &* i] ^ bits.0) | (words[2 &* i &+ 1] ^ bits.1)
          // 1 when the difference is zero, in arithmetic (a comparison would become a branch again).
          let isEqual = 1 &- Int(truncatingIfNeeded: (difference | (0 &- difference)) >> 63)
          found |= isEqual &* (i &+ 1)
        }
        return found
      }
      if found > 0 { return found &- 1 }
      guard names.count <= 32 else { return entity.attributeIndex(named: name) }
      let signature = Rules.signature(name)
      for i in names.indices where signatures[i] == signature && names[i] == name { return i }
      return nil
    }

    // The refusals, out of the per-row loop.

    @inline(never)
    func unknownKey(_ key: String, row index: Int) -> StoreError {
      let what = entity.relationship(named: key) == nil ? "has no attribute" : "has a relationship, not an attribute,"
      return StoreError(
        .invalidQuery, "\(entity.name) \(what) '\(key)' (batch insert row \(index)); a batch insert sets attributes only",
        entity: entity.name, key: key)
    }

    @inline(never)
    func notSettable(_ position: Int, row index: Int) -> StoreError {
      let attribute = entity.attributes[position]
      let why = attribute.isTransient ? "is transient and not stored" : "is derived; the store computes it"
      return StoreError(
        .invalidQuery, "\(entity.name).\(attribute.name) \(why); batch insert row \(index) cannot set it",
        entity: entity.name, key: attribute.name)
    }

    @inline(never)
    func wrongType(_ key: String, _ value: Value, row index: Int) -> StoreError {
      let type = position(of: key).map { attributeRules[$0].type.rawValue } ?? "?"
      return StoreError(
        .validation, "\(entity.name).\(key) is a \(type) and cannot hold \(value) (batch insert row \(index))",
        entity: entity.name, key: key, value: value)
    }

    @inline(never)
    func nilForRequired(_ key: String, row index: Int) -> StoreError {
      StoreError(
        .validation, "\(entity.name).\(key) is not optional; batch insert row \(index) sets it to nil", entity: entity.name,
        key: key)
    }
  }

  /// Checks `row` (the `index`th of the batch) against `rules`.
  ///
  /// - Throws: `.invalidQuery` for a key that is not a stored, settable attribute (unknown, a
  ///   relationship, transient or derived); `.validation` for a value the attribute cannot hold (wrong
  ///   type, out of range, nil for a non-optional attribute) and for a missing non-optional attribute
  ///   without a default. Each error names the entity, the key and the row index.
  public init(_ row: [String: Value], index: Int, rules: Rules) throws {
    self.init(rules: rules)
    try reload(row, index: index, rules: rules)
  }

  /// A row that gives nothing yet (every attribute at its initial value), to ``reload(_:index:rules:)``.
  public init(rules: Rules) {
    values = rules.initialValues
    given = []
  }

  /// Checks `row` (the `index`th of the batch) against `rules` into this row, whose storage a batch reuses
  /// from row to row (`rules` must be those this row was made with).
  ///
  /// ```swift
  /// var row = BatchInsertRow(rules: rules)
  /// for (index, dictionary) in rows.enumerated() {
  ///   try row.reload(dictionary, index: index, rules: rules)
  /// }
  /// ```
  public mutating func reload(_ row: [String: Value], index: Int, rules: Rules) throws {
    let previous = given
    let count = values.count
    var mask: UInt64 = 0
    var positions: [Int] = []
    var requiredGiven = 0
    try rules.attributeRules.withUnsafeBufferPointer { attributes in
      for position in previous { values[position] = rules.initialValues[position] }
      for (key, value) in row {
        guard let position = rules.position(of: key) else { throw rules.unknownKey(key, row: index) }
        let rule = attributes[position]
        guard rule.isSettable else { throw rules.notSettable(position, row: index) }
        if rule.type.isCanonical(value) {
          if !rule.isOptional && value.isNull { throw rules.nilForRequired(key, row: index) }
          values[position] = value
        } else {
          guard let converted = rule.type.coerce(value) else { throw rules.wrongType(key, value, row: index) }
          if !rule.isOptional && converted.isNull { throw rules.nilForRequired(key, row: index) }
          values[position] = converted
        }
        if count <= 64 { mask |= 1 << UInt64(position) } else { positions.append(position) }
        if rule.isRequired { requiredGiven += 1 }
      }
    }
    given.removeAll(keepingCapacity: true)
    if count <= 64 {
      while mask != 0 {
        given.append(mask.trailingZeroBitCount)
        mask &= mask &- 1
      }
    } else {
      given = positions.sorted()
    }
    if requiredGiven < rules.required.count,
      let position = rules.required.first(where: { row[rules.entity.attributes[$0].name] == nil })
    {
      let key = rules.entity.attributes[position].name
      throw StoreError(
        .validation, "\(rules.entity.name).\(key) is not optional and has no default; batch insert row \(index) does not give it",
        entity: rules.entity.name, key: key)
    }
  }
}
