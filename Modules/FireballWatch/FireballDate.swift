import Foundation

/// The timestamps JPL uses: `yyyy-MM-dd HH:mm:ss`, UTC.
public enum FireballDate {
  private static let calendar: Calendar = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
    return calendar
  }()

  /// The date `text` names, or `nil` when it is not exactly `yyyy-MM-dd HH:mm:ss` of a real time.
  public static func parse(_ text: String) -> Date? {
    let parts = text.split(omittingEmptySubsequences: false) { $0 == "-" || $0 == " " || $0 == ":" }
    let widths = [4, 2, 2, 2, 2, 2]
    let separators = Array("-- ::")
    guard text.count == 19, parts.count == 6,
      zip(parts, widths).allSatisfy({ part, width in part.count == width && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber) }),
      [4, 7, 10, 13, 16].enumerated().allSatisfy({ text[text.index(text.startIndex, offsetBy: $1)] == separators[$0] })
    else { return nil }
    let numbers = parts.compactMap { Int($0) }
    let components = DateComponents(
      year: numbers[0], month: numbers[1], day: numbers[2], hour: numbers[3], minute: numbers[4], second: numbers[5])
    guard let date = calendar.date(from: components), string(from: date) == text else { return nil }
    return date
  }

  /// `date` as `yyyy-MM-dd HH:mm:ss`, UTC.
  public static func string(from date: Date) -> String {
    let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    return String(
      format: "%04d-%02d-%02d %02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0,
      c.second ?? 0)
  }

  /// `date` as ISO 8601, UTC: `2024-02-26T11:21:01Z`.
  public static func iso8601(_ date: Date) -> String {
    string(from: date).replacingOccurrences(of: " ", with: "T") + "Z"
  }
}
