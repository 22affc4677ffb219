import Foundation
import Strata

/// Release dates are calendar days, written `YYYY-MM-DD` and kept at midnight UTC.
public enum ReleaseDate {
  private static var calendar: Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    return calendar
  }

  public static func parse(_ text: String) throws -> Date {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
      let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
      let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
      format(date) == text
    else {
      throw StoreError(
        .validation, "release date '\(text)' is not a date written YYYY-MM-DD", key: "releaseDate", value: .string(text))
    }
    return date
  }

  public static func format(_ date: Date) -> String {
    let c = calendar.dateComponents([.year, .month, .day], from: date)
    return String(format: "%04d-%02d-%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
  }
}
