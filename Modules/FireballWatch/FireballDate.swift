import Foundation

/// The timestamps JPL uses: `yyyy-MM-dd HH:mm:ss`, UTC.
public enum FireballDate {
  private static let calendar: Calendar = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
    return calendar
  }()

  private static let pattern = Array("0000-00-00 00:00:00".utf8)

  /// The date `text` names, or `nil` when it is not exactly `yyyy-MM-dd HH:mm:ss` of a real time.
  public static func parse(_ text: String) -> Date? {
    let bytes = Array(text.utf8)
    let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
    func matches(_ byte: UInt8, _ expected: UInt8) -> Bool {
      expected == digits.lowerBound ? digits.contains(byte) : byte == expected
    }
    guard bytes.count == pattern.count, zip(bytes, pattern).allSatisfy(matches) else { return nil }
    func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - digits.lowerBound) } }
    let components = DateComponents(
      year: number(0..<4), month: number(5..<7), day: number(8..<10), hour: number(11..<13), minute: number(14..<16),
      second: number(17..<19))
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
