import StrataCLI
import StrataStoreKit

/// What `strata info` prints: a store and its model, with a row count per entity.
struct StoreReport: Encodable {
  struct Attribute: Encodable {
    var name: String
    var type: String
    var isOptional: Bool
    var isUnique: Bool
    var isIndexed: Bool
    var isTransient: Bool
    var derivation: String?
  }

  struct Relationship: Encodable {
    var name: String
    var destination: String
    var isToMany: Bool
    var isOrdered: Bool
    var inverse: String?
    var deleteRule: String

    func encode(to encoder: any Encoder) throws {
      var c = encoder.container(keyedBy: CodingKeys.self)
      try c.encode(name, forKey: .name)
      try c.encode(destination, forKey: .destination)
      try c.encode(isToMany, forKey: .isToMany)
      if isOrdered { try c.encode(isOrdered, forKey: .isOrdered) }
      try c.encode(inverse, forKey: .inverse)  // null rather than absent
      try c.encode(deleteRule, forKey: .deleteRule)
    }

    private enum CodingKeys: String, CodingKey { case name, destination, isToMany, isOrdered, inverse, deleteRule }
  }

  struct Entity: Encodable {
    var name: String
    var count: Int
    var attributes: [Attribute]
    var relationships: [Relationship]
    var uniquenessConstraints: [[String]]
    var indexes: [[String]]
  }

  var storeType: String
  var identifier: String
  var path: String?
  var modelFingerprint: String
  /// The name the app gave the stored model's version, if it named its versions.
  var modelVersion: String?
  var entities: [Entity]

  init(store: any PersistentStore) throws {
    storeType = store.storeType.rawValue
    identifier = store.identifier
    path = store.url.map(StoreFlags.displayLocation(of:))
    modelFingerprint = store.model.fingerprint
    modelVersion = store.model.versionName
    entities = try store.model.entities.map { entity in
      Entity(
        name: entity.name,
        count: try store.count(FetchDescription(entityName: entity.name)),
        attributes: entity.attributes.map { a in
          Attribute(
            name: a.name, type: a.type.rawValue, isOptional: a.isOptional,
            isUnique: entity.uniquenessConstraints.contains([a.name]), isIndexed: a.isIndexed,
            isTransient: a.isTransient, derivation: a.derivation)
        },
        relationships: entity.relationships.map { r in
          Relationship(
            name: r.name, destination: r.destination, isToMany: r.isToMany, isOrdered: r.isOrdered, inverse: r.inverse,
            deleteRule: r.deleteRule.rawValue)
        },
        uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
    }
  }

  /// The report as readable text: a header, then per entity its attribute and relationship tables.
  var text: String {
    var lines = [
      "Store type:         \(storeType)",
      "Store identifier:   \(identifier)",
    ]
    if let path { lines.append("Path:               \(path)") }
    lines.append("Model version:      \(modelVersion.map { "'\($0)'" } ?? "unnamed") (checksum \(modelFingerprint))")
    for entity in entities {
      lines.append("")
      lines.append("\(entity.name) — \(entity.count) row\(entity.count == 1 ? "" : "s")")
      lines.append(
        indented(
          textTable(
            headers: ["Attribute", "Type", "Optional", "Flags"],
            rows: entity.attributes.map { a in
              let flags = [
                a.isUnique ? "unique" : nil, a.isIndexed ? "indexed" : nil, a.isTransient ? "transient" : nil,
                a.derivation.map { "derived: \($0)" },
              ]
              return [a.name, a.type, a.isOptional ? "yes" : "no", flags.compactMap { $0 }.joined(separator: ", ")]
            })))
      if !entity.relationships.isEmpty {
        lines.append(
          indented(
            textTable(
              headers: ["Relationship", "Destination", "Kind", "Inverse", "Delete rule"],
              rows: entity.relationships.map { r in
                [
                  r.name, "→ \(r.destination)", r.isOrdered ? "ordered to-many" : r.isToMany ? "to-many" : "to-one",
                  r.inverse ?? "-", r.deleteRule,
                ]
              })))
      }
      let compound = entity.uniquenessConstraints.filter { $0.count > 1 }
      if !compound.isEmpty {
        lines.append("  Unique together: " + compound.map { $0.joined(separator: "+") }.joined(separator: "; "))
      }
      if !entity.indexes.isEmpty {
        lines.append("  Indexes: " + entity.indexes.map { $0.joined(separator: "+") }.joined(separator: "; "))
      }
    }
    return lines.joined(separator: "\n")
  }

  private func indented(_ block: String) -> String {
    block.split(separator: "\n", omittingEmptySubsequences: false)
      .map { line in "  " + line.replacing(/\s+$/, with: "") }
      .joined(separator: "\n")
  }
}
