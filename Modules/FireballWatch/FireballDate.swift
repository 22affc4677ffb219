import Foundation

/// The timestamps JPL uses: `yyyy-MM-dd HH:mm:ss`, UTC; read also in the ISO 8601 form the app's JSON and
/// history print (`yyyy-MM-ddTHH:mm:ssZ`), so a time copied from either can be typed back.
public enum FireballDate {
  private static let calendar: Calendar = {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
    return calendar
  }()

  private static let pattern = Array("0000-00-00 00:00:00".utf8)

  /// The date `text` names, or `nil` when it is not exactly `yyyy-MM-dd HH:mm:ss` or
  /// `yyyy-MM-ddTHH:mm:ssZ` of a real time.
  ///
  /// ```swift
  /// FireballDate.parse("2024-02-26 11:21:01") == FireballDate.parse("2024-02-26T11:21:01Z")  // true
  /// ```
  public static func parse(_ text: String) -> Date? {
    var bytes = Array(text.utf8)
    if bytes.count == pattern.count + 1, bytes[10] == UInt8(ascii: "T"), bytes.last == UInt8(ascii: "Z") {
      bytes.removeLast()
      bytes[10] = UInt8(ascii: " ")
    }
    let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
    func matches(_ byte: UInt8, _ expected: UInt8) -> Bool {
      expected == digits.lowerBound ? digits.contains(byte) : byte == expected
    }
    guard bytes.count == pattern.count, zip(bytes, pattern).allSatisfy(matches) else { return nil }
    func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - digits.lowerBound) } }
    let components = DateComponents(
      year: number(0..<4), month: number(5..<7), day: number(8..<10), hour: number(11..<13), minute: number(14..<16),
      second: number(17..<19))
    guard let date = calendar.date(from: components), Array(string(from: date).utf8) == bytes else { return nil }
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
