import Foundation
import StrataCore

extension HubLedger {
  /// Refuses a transaction that does not fit the hub's model, before anything of it is applied: a replica
  /// of a newer model (an entity or field the hub does not know), a replica of an older model (an insert
  /// without a required attribute of the hub's model: a replica sends every attribute its model has), or a
  /// value the model's rules refuse.
  func check(_ transaction: MirrorTransaction) throws {
    for change in transaction.changes {
      guard let entity = model.entity(named: change.entityName) else {
        throw MirrorError.rejected("the hub's model has no entity \(change.entityName) (the hub's model is older)")
      }
      let travelling = MirrorModel.fields(of: entity, in: model)
      if change.kind == .insert,
        let missing = travelling.attributes.first(where: {
          change.fields[$0] == nil && entity.attribute(named: $0)?.isOptional == false
        })
      {
        throw MirrorError.rejected(
          "the hub's model requires \(entity.name).\(missing), which this replica's model lacks "
            + "(this replica's model is older than the hub's; retry once the app is upgraded)")
      }
      let references = Set(travelling.references)
      let lists = Set(travelling.lists)
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        let place = "\(entity.name).\(name)"
        switch field {
        case .reference:
          guard references.contains(name) else {
            throw MirrorError.rejected("the hub's model has no to-one relationship \(place) (the hub's model is older)")
          }
        case .references:
          guard lists.contains(name) else {
            throw MirrorError.rejected(
              "the hub's model has no ordered or many-to-many relationship \(place) (the hub's model is older)")
          }
        case .value(let value):
          guard let attribute = entity.attribute(named: name), !attribute.isTransient, attribute.derivation == nil else {
            throw MirrorError.rejected("the hub's model has no stored attribute \(place) (the hub's model is older)")
          }
          try Self.check(value, of: attribute, at: place)
        }
      }
    }
  }

  static func check(_ value: Value, of attribute: AttributeDescription, at place: String) throws {
    if value.isNull {
      guard attribute.isOptional else { throw MirrorError.rejected("\(place) is required and was sent without a value") }
      return
    }
    guard let coerced = attribute.type.coerce(value) else {
      throw MirrorError.rejected("\(place) holds \(value), not a \(attribute.type.rawValue)")
    }
    guard let number = coerced.numericValue else { return }
    let rules = attribute.validation
    if let minimum = rules.minimum, number < minimum {
      throw MirrorError.rejected("\(place) must be at least \(minimum.formatted()) (got \(number.formatted()))")
    }
    if let maximum = rules.maximum, number > maximum {
      throw MirrorError.rejected("\(place) must be at most \(maximum.formatted()) (got \(number.formatted()))")
    }
  }
}
