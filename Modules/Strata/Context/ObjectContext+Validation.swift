import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Checks a save before anything is sent and builds the change set `assembler` makes of it, in one pass
  /// over the inserted and changed objects: each is validated (the model's rules and the subclass's own
  /// validation) right before its change is assembled, rather than in a pass of its own over objects whose
  /// memory has gone cold in a large save. `changes.updated` are the changed objects with persistent
  /// changes (those validated and written). Every failure is collected as it always was — the inserted
  /// objects' in insertion order, the updated ones', then `validateForDelete()` of deleted ones — into one
  /// `.validation` error; then the `deny` delete rules. When it throws, no change set is returned, so
  /// nothing reaches the store.
  func validatedChangeSet(
    _ changes: (inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject]), assembler: SaveAssembler
  ) throws -> ChangeSet {
    if !coordinator.model.inheritance.isEmpty {
      for object in changes.inserted where !object.isDeletedStorage {
        if let info = object.info { try coordinator.model.requireInsertable(info.entity.name) }
      }
    }
    var failures: [ValidationFailure] = []
    let changeSet = assembler.changeSet(inserted: changes.inserted, updated: changes.updated, deleted: changes.deleted) {
      object, info, isInsert in
      guard let info else { return }
      // Most entities have nothing to check but their required attributes: checked here, without the
      // general method's closures and copies (this runs for every inserted object).
      if isInsert && info.checksRequiredOnly {
        checkRequired(object, info, into: &failures)
        runCustomValidation(of: object, into: &failures) { try object.validateForInsert() }
      } else {
        validate(object, info, isInsert: isInsert, into: &failures)
      }
    }
    for object in changes.deleted { runCustomValidation(of: object, into: &failures) { try object.validateForDelete() } }
    if let first = failures.first {
      let messages = failures.map(\.message)
      throw StoreError(
        .validation,
        failures.count == 1 ? messages[0] : "\(failures.count) validation errors: \(messages.joined(separator: "; "))",
        entity: first.conflict.entity, key: first.conflict.keys.first, value: first.conflict.values.first,
        conflicts: failures.map(\.conflict))
    }
    try checkDenyRules(changes.deleted)
    return changeSet
  }

  private struct ValidationFailure {
    var conflict: StoreError.Conflict
    var message: String
  }

  /// What ``validate(_:_:isInsert:into:)`` reports of an entity that only has required attributes to
  /// check (`EntityInfo.checksRequiredOnly`): each nil one, in attribute order.
  @inline(__always)
  private func checkRequired(_ object: ManagedObject, _ info: EntityInfo, into failures: inout [ValidationFailure]) {
    // Each value read where it lies (the arrays are not bound to locals: each would count a reference).
    for k in info.requiredIndices.indices where object.values.isNull(at: info.requiredIndices[k]) {
      failures.append(Self.requiredFailure(of: object, info, info.requiredIndices[k]))
    }
  }

  /// The failure of required attribute `index` of `object`, which is nil (as `validate` words it).
  @inline(never)
  private static func requiredFailure(of object: ManagedObject, _ info: EntityInfo, _ index: Int) -> ValidationFailure {
    let entityName = info.entity.name
    let key = info.entity.attributes[index].name
    return ValidationFailure(
      conflict: StoreError.Conflict(objectID: object.objectID, entity: entityName, keys: [key], values: [.null]),
      message: "\(entityName).\(key) is required")
  }

  private func validate(_ object: ManagedObject, _ info: EntityInfo, isInsert: Bool, into failures: inout [ValidationFailure]) {
    func fail(_ key: String, _ value: Value, _ rule: String) {
      let entityName = info.entity.name
      let shown = value.isNull ? "" : " (got \(value))"
      failures.append(
        ValidationFailure(
          conflict: StoreError.Conflict(objectID: object.objectID, entity: entityName, keys: [key], values: [value]),
          message: "\(entityName).\(key) \(rule)\(shown)"))
    }
    // One pass over the attributes, read in place (this runs for every attribute of every saved object):
    // the model's rules, then the subclass's own. The subclass's failures are reported after the model's
    // and the relationships', as if checked in a later pass.
    var customFailures: [ValidationFailure] = []
    let validator = info.validatesValues ? object as? any ValueValidating : nil
    if validator == nil && !info.hasAttributeRules {
      // Decided per entity: nothing to check but the required attributes' nil, in attribute order as
      // below. No app code runs here, so the values are read in place.
      let values = object.values
      info.requiredIndices.withUnsafeBufferPointer { required in
        for index in required where values.isNull(at: index) {
          fail(info.entity.attributes[index].name, .null, "is required")
        }
      }
    } else {
      validateAttributes(of: object, info, validator, fail, into: &customFailures)
    }
    if info.hasRelationshipRules {
      let entity = info.entity
      for (i, rel) in entity.toOneRelationships.enumerated() where !rel.isOptional && object.toOne[i] == nil {
        fail(rel.name, .null, "is required")
      }
      for (i, rel) in entity.toManyRelationships.enumerated() where rel.minCount > 0 || rel.maxCount > 0 {
        let count = loadToMany(object, index: i).count
        if rel.minCount > 0 && count < rel.minCount {
          fail(rel.name, .int(Int64(count)), "must have at least \(rel.minCount) objects")
        }
        if rel.maxCount > 0 && count > rel.maxCount {
          fail(rel.name, .int(Int64(count)), "must have at most \(rel.maxCount) objects")
        }
      }
    }
    // Appending an empty array still runs `append(contentsOf:)`'s generic code, for every saved object.
    if !customFailures.isEmpty { failures += customFailures }
    runCustomValidation(of: object, into: &failures) {
      if isInsert { try object.validateForInsert() } else { try object.validateForUpdate() }
    }
  }

  /// The model's rules of every validated attribute of `object`, and the class's own check of single
  /// values (`validator`), whose failures go to `customFailures` (reported after the model's).
  private func validateAttributes(
    of object: ManagedObject, _ info: EntityInfo, _ validator: (any ValueValidating)?,
    _ fail: (String, Value, String) -> Void, into customFailures: inout [ValidationFailure]
  ) {
    // The values as they are now (their storage shared, not copied): the subclass's code may set values of the
    // object.
    let values = object.values
    info.validatedAttributes.withUnsafeBufferPointer { attributes in
      for i in attributes.indices {
        let index = attributes[i].index
        // A value kept in external storage that the object has not read is the one saved, checked then.
        if info.hasExternalAttributes, info.isExternal[index], case .data(let stored) = values[index],
          stored.count == ExternalDataReference.size, ExternalDataReference.decode(stored) != nil
        {
          continue
        }
        if values.isNull(at: index) {
          if !attributes[i].isOptional { fail(attributes[i].name, .null, "is required") }
        } else if attributes[i].hasRules, let rules = attributes[i].rules {
          check(values[index], of: attributes[i].name, against: rules, fail)
        }
        guard let validator, !attributes[i].isTransient else { continue }
        do {
          try Self.validate(values[index], forKey: attributes[i].name, with: validator)
        } catch {
          noteCustomValidationError(error, of: object, key: attributes[i].name, value: values[index], into: &customFailures)
        }
      }
    }
  }

  /// Calls ``ValueValidating/validateValue(_:forKey:)`` with `value` as a Swift value. Each common kind
  /// is passed straight from its own case rather than through ``Value/swiftValue``'s switch, which was
  /// not inlined (this runs for every stored attribute of every saved object of the class).
  @inline(__always)
  private static func validate(_ value: Value, forKey key: String, with object: any ValueValidating) throws {
    switch value {
    case .null: try object.validateValue(nil, forKey: key)
    case .string(let string): try object.validateValue(string, forKey: key)
    case .int(let integer): try object.validateValue(integer, forKey: key)
    case .double(let double): try object.validateValue(double, forKey: key)
    case .bool(let bool): try object.validateValue(bool, forKey: key)
    case .date(let date): try object.validateValue(date, forKey: key)
    default: try object.validateValue(value.swiftValue, forKey: key)
    }
  }

  /// Checks a non-nil value against an attribute's rules (range, length, pattern).
  private func check(_ value: Value, of name: String, against rules: AttributeValidation, _ fail: (String, Value, String) -> Void)
  {
    if let number = value.numericValue {
      if let min = rules.minimum, number < min { fail(name, value, "must be at least \(format(min))") }
      if let max = rules.maximum, number > max { fail(name, value, "must be at most \(format(max))") }
    }
    if case .string(let s) = value {
      if let min = rules.minimumLength, s.count < min { fail(name, value, "must be at least \(characters(min)) long") }
      if let max = rules.maximumLength, s.count > max { fail(name, value, "must be at most \(characters(max)) long") }
      if let pattern = rules.pattern, !((try? StringSemantics.matches(s, pattern, [])) ?? false) {
        fail(name, value, "must match the pattern \(pattern)")
      }
    }
  }

  /// Runs a subclass's own validation method, turning what it throws into a failure of `key`.
  private func runCustomValidation(
    of object: ManagedObject, key: String? = nil, value: Value = .null, into failures: inout [ValidationFailure],
    _ body: () throws -> Void
  ) {
    do {
      try body()
    } catch {
      noteCustomValidationError(error, of: object, key: key, value: value, into: &failures)
    }
  }

  /// Records what a subclass's own validation method threw as a failure of `key`.
  private func noteCustomValidationError(
    _ error: any Error, of object: ManagedObject, key: String?, value: Value, into failures: inout [ValidationFailure]
  ) {
    let entity = object.entity.name
    let reason = (error as? StoreError)?.message ?? String(describing: error)
    failures.append(
      ValidationFailure(
        conflict: StoreError.Conflict(objectID: object.objectID, entity: entity, keys: key.map { [$0] } ?? [], values: [value]),
        message: key.map { "\(entity).\($0): \(reason)" } ?? "\(entity) \(object.objectID): \(reason)"))
  }

  private func checkDenyRules(_ deleted: [ManagedObject]) throws {
    for object in deleted {
      guard let info = object.info else { continue }
      for rel in info.entity.relationships where rel.deleteRule == .deny {
        let remaining = currentTargets(of: object, rel).filter { !$0.isDeletedStorage }
        if !remaining.isEmpty {
          throw StoreError(
            .deleteDenied,
            "cannot delete \(info.entity.name) \(object.objectID): its '\(rel.name)' relationship still holds \(remaining.count) \(rel.destination) object\(remaining.count == 1 ? "" : "s") and its delete rule is deny",
            entity: info.entity.name, key: rel.name)
        }
      }
    }
  }

  private func format(_ number: Double) -> String {
    number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
  }
}

/// "1 character", "2 characters".
private func characters(_ count: Int) -> String { count == 1 ? "1 character" : "\(count) characters" }
