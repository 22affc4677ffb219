import Foundation
import Strata

/// Release dates are calendar days, written `YYYY-MM-DD` and kept at midnight UTC.
public enum ReleaseDate {
  private static var calendar: Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    return calendar
  }

  /// The day `text` names (`YYYY-MM-DD`).
  ///
  /// - Parameter field: what the date is, for the error: `release date` unless given.
  /// - Throws: `.validation` naming `field` when `text` is not a real day written `YYYY-MM-DD`.
  public static func parse(_ text: String, field: String = "release date", key: String = "releaseDate") throws -> Date {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
      let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
      let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
      format(date) == text
    else {
      throw StoreError(
        .validation, "\(field) '\(text)' is not a date written YYYY-MM-DD", key: key, value: .string(text))
    }
    return date
  }

  public static func format(_ date: Date) -> String {
    let c = calendar.dateComponents([.year, .month, .day], from: date)
    return String(format: "%04d-%02d-%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
  }
}
