import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

@main
struct FireballWatchCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fireball-watch",
    abstract: "Keep NASA/JPL fireball reports in a Strata store, and group them.",
    discussion: exitStatusHelp,
    version: strataVersion,
    subcommands: [Import.self, List.self, Delete.self, Group.self, Groups.self, History.self, Watch.self])

  static func main() { mainReportingUsageErrors() }
}

struct FireballDateArgument: ExpressibleByArgument {
  var date: Date

  init?(argument: String) {
    guard let date = FireballDate.parse(argument) else { return nil }
    self.date = date
  }
}

struct JSONFireball: Encodable {
  var fireball: FireballRecord

  enum CodingKeys: String, CodingKey {
    case dateTimeStamp, radiatedEnergy, impactEnergy, latitude, longitude, altitude, velocity
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(FireballDate.iso8601(fireball.dateTimeStamp), forKey: .dateTimeStamp)
    try container.encode(fireball.radiatedEnergy, forKey: .radiatedEnergy)
    try container.encode(fireball.impactEnergy, forKey: .impactEnergy)
    try container.encode(fireball.latitude, forKey: .latitude)
    try container.encode(fireball.longitude, forKey: .longitude)
    try container.encode(fireball.altitude, forKey: .altitude)
    try container.encode(fireball.velocity, forKey: .velocity)
  }
}

func openWatch(_ options: StoreFlags, readingOnly: Bool = false) throws -> FireballWatch {
  if options.startsFromPreview { return try FireballWatch.preview(registry: options.registry) }
  let description = try options.storeDescription(
    app: "fireball-watch", fileName: "FireballWatch.sqlite", entity: "Fireball", forReadingOnly: readingOnly)
  StoreFlags.noteOpening(description)
  return FireballWatch(container: try FireballWatch.makeContainer(store: description, registry: options.registry))
}

func number(_ value: Double?) -> String { value.map { String(format: "%g", $0) } ?? "-" }

func coordinate(_ value: Double?, _ positive: String, _ negative: String) -> String {
  value.map { "\(number(abs($0)))\($0 < 0 ? negative : positive)" } ?? "-"
}

func fireballTable(_ fireballs: [FireballRecord]) -> String {
  textTable(
    headers: ["Date (UTC)", "Energy (10^10 J)", "Impact (kt)", "Lat", "Lon", "Alt (km)", "Vel (km/s)"],
    rows: fireballs.map {
      [
        FireballDate.string(from: $0.dateTimeStamp), number($0.radiatedEnergy), number($0.impactEnergy),
        coordinate($0.latitude, "N", "S"), coordinate($0.longitude, "E", "W"), number($0.altitude), number($0.velocity),
      ]
    })
}

func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
