import Foundation
import Strata

extension FireballWatch {
  /// Every group by name, with its derived fireball count.
  public func groups() throws -> [FireballGroupRecord] {
    try context.performAndWait {
      try context.fetch(FetchRequest<FireballGroup>(sortDescriptors: [QuerySort(\FireballGroup.name)]))
        .map(FireballGroupRecord.init)
    }
  }

  /// The dates of the fireballs in the group named `name`, newest first.
  /// - Throws: `.notFound` naming the group.
  public func fireballs(inGroup name: String) throws -> [FireballRecord] {
    try context.performAndWait {
      try findGroup(name).fireballs.map(FireballRecord.init).sorted { $0.dateTimeStamp > $1.dateTimeStamp }
    }
  }

  /// The longest name a group may have, in characters.
  public static let groupNameLimit = 100

  /// Makes an empty group.
  /// - Throws: `.validation` for an empty, multi-line or over-long name; `.constraintConflict` when a group
  ///   has the name already.
  @discardableResult
  public func createGroup(_ name: String) throws -> FireballGroupRecord {
    try context.performAndWait {
      let name = try Self.groupName(name)
      try requireFreeGroupName(name)
      let group = FireballGroup(context: context)
      group.name = name
      try save()
      return FireballGroupRecord(group)
    }
  }

  /// Gives the group named `name` the name `newName`; its fireballs stay in it.
  /// - Throws: `.notFound` naming the group; `.validation` or `.constraintConflict` for `newName` as
  ///   ``createGroup(_:)`` does.
  @discardableResult
  public func renameGroup(_ name: String, to newName: String) throws -> FireballGroupRecord {
    try context.performAndWait {
      let newName = try Self.groupName(newName)
      let group = try findGroup(name)
      if newName != group.name { try requireFreeGroupName(newName) }
      group.name = newName
      try save()
      return FireballGroupRecord(group)
    }
  }

  /// Deletes the group named `name`; its fireballs stay in the store (and in their other groups).
  /// - Throws: `.notFound` naming the group.
  public func deleteGroup(_ name: String) throws {
    try context.performAndWait {
      context.delete(try findGroup(name))
      try save()
    }
  }

  /// `name` without surrounding white space, checked: one line, 1 to ``groupNameLimit`` characters.
  static func groupName(_ name: String) throws -> String {
    let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
    func refuse(_ problem: String) -> StoreError {
      StoreError(.validation, "a group name \(problem)", entity: "FireballGroup", key: "name", value: .string(name))
    }
    guard !name.isEmpty else { throw refuse("must not be empty") }
    guard !name.contains(where: \.isNewline) else { throw refuse("must be one line") }
    guard name.count <= groupNameLimit else {
      throw refuse("must be at most \(groupNameLimit) characters long (this one has \(name.count))")
    }
    return name
  }

  private func requireFreeGroupName(_ name: String) throws {
    guard try context.count(for: FetchRequest<FireballGroup>(where: \.name == name)) == 0 else {
      throw StoreError(
        .constraintConflict, "a group named '\(name)' exists already", entity: "FireballGroup", key: "name",
        value: .string(name))
    }
  }

  /// Puts the fireballs seen at `dates` in the group named `name` (those already in it stay).
  /// - Throws: `.notFound` naming the group or the first unknown date; the store is then unchanged.
  @discardableResult
  public func add(_ dates: [Date], toGroup name: String) throws -> FireballGroupRecord {
    try editGroup(name, dates) { group, fireballs in group.fireballs.formUnion(fireballs) }
  }

  /// Takes the fireballs seen at `dates` out of the group named `name` (those not in it are ignored).
  /// - Throws: `.notFound` naming the group or the first unknown date; the store is then unchanged.
  @discardableResult
  public func remove(_ dates: [Date], fromGroup name: String) throws -> FireballGroupRecord {
    try editGroup(name, dates) { group, fireballs in group.fireballs.subtract(fireballs) }
  }

  /// Edits a group and saves. Another process's edit of the same group in between is merged by the
  /// context's merge policy (links are added and removed, not overwritten); when a conflict remains
  /// (the group or a fireball deleted meanwhile), the edit runs again on what is stored now, up to
  /// ``saveAttempts`` times, and then reports it.
  private func editGroup(
    _ name: String, _ dates: [Date], _ edit: (FireballGroup, [Fireball]) -> Void
  ) throws -> FireballGroupRecord {
    try context.performAndWait {
      var attempt = 1
      while true {
        let group = try findGroup(name)
        let fireballs = try dates.map(find)
        edit(group, fireballs)
        do {
          try save()
          return FireballGroupRecord(group)
        } catch let error as StoreError where error.code == .optimisticLockConflict && attempt < Self.saveAttempts {
          attempt += 1
          context.reset()
        }
      }
    }
  }

  /// How many times an edit of a group is tried when other processes keep changing it.
  static let saveAttempts = 4

  private func findGroup(_ name: String) throws -> FireballGroup {
    guard let group = try context.fetch(FetchRequest<FireballGroup>(where: \.name == name)).first else {
      throw StoreError(.notFound, "no group is named '\(name)'", entity: "FireballGroup", key: "name", value: .string(name))
    }
    return group
  }
}

extension FireballGroupRecord {
  init(_ group: FireballGroup) {
    self.init(name: group.name, fireballCount: Int(group.fireballCount))
  }
}
