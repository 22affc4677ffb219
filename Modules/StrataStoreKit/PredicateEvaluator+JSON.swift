import Foundation

extension JSONComparison {
  /// A comparison of a key path into a Codable attribute, evaluated against `snapshot`.
  /// - Throws: `.corrupted` naming the entity, object and key when the stored text is not JSON.
  static func evaluate(
    _ path: ResolvedKeyPath, _ op: ComparisonOperator, _ rhs: Value, _ modifier: ComparisonModifier,
    _ options: StringOptions, _ snapshot: Snapshot, _ source: some EvaluationSource
  ) throws -> Bool {
    let stored = try KeyPathReader.value(of: path, from: snapshot, source)
    let test = Test(
      access: Access(members: path.members, fold: path.memberFold), modifier: modifier, op: op, options: options,
      rhs: rhs)
    do {
      return try holds(stored, test)
    } catch let error as StoreError where error.code == .corrupted {
      guard case .attribute(let attribute, _) = path.terminal else { throw error }
      throw StoreError(
        .corrupted,
        "\(path.terminalEntity.name).\(attribute.name) of \(snapshot.objectID.uriRepresentation) does not hold JSON, so '\(path.keyPath)' cannot be read",
        entity: path.terminalEntity.name, key: attribute.name, value: stored)
    }
  }
}
