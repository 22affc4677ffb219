import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

extension FireballWatchCommand {
  struct Group: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Make groups of fireballs, put fireballs in them or take them out, rename or delete them.",
      subcommands: [Create.self, Add.self, Remove.self, Rename.self, Delete.self])
  }
}

extension FireballWatchCommand.Group {
  struct Create: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make an empty group.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The group's name, unique among groups.") var name: String

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let group = try openWatch(storeOptions).createGroup(name)
        print("Created group '\(group.name)'")
      }
    }
  }

  struct Rename: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Give a group another name.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The group's name.") var name: String
    @Argument(help: "Its new name, unique among groups.") var newName: String

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let group = try openWatch(storeOptions).renameGroup(name, to: newName)
        print("Renamed group '\(name)' to '\(group.name)'")
      }
    }
  }

  struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete a group (its fireballs stay in the store and in their other groups).")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The group's name.") var name: String

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        try openWatch(storeOptions).deleteGroup(name)
        print("Deleted group '\(name)'")
      }
    }
  }

  struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Put fireballs in a group.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var members: GroupMembers

    func run() throws {
      try members.edit(storeOptions) { watch, dates, name in try watch.add(dates, toGroup: name) }
    }
  }

  struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take fireballs out of a group.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var members: GroupMembers

    func run() throws {
      try members.edit(storeOptions) { watch, dates, name in try watch.remove(dates, fromGroup: name) }
    }
  }
}

struct GroupMembers: ParsableArguments {
  @Argument(help: "The group's name.") var name: String
  @Argument(help: ArgumentHelp("When each fireball was seen, as yyyy-MM-dd HH:mm:ss or ISO 8601 (UTC).", valueName: "date"))
  var dates: [FireballDateArgument]

  func validate() throws {
    if dates.isEmpty { throw ValidationError("give at least one <date>") }
  }

  func edit(
    _ storeOptions: StoreFlags, _ change: (FireballWatch, [Date], String) throws -> FireballGroupRecord
  ) throws {
    try runReportingErrors(tool: "fireball-watch") {
      let group = try change(try openWatch(storeOptions), dates.map(\.date), name)
      print("Group '\(group.name)' holds \(plural(group.fireballCount, "fireball"))")
    }
  }
}
