import Foundation
import Strata

extension PotatoRater {
  /// The varieties file bundled with the module: one variety per line.
  public static func bundledVarietiesURL() throws -> URL {
    guard let url = Bundle.module.url(forResource: "Potatoes", withExtension: "txt") else {
      throw StoreError(.notFound, "Potatoes.txt is missing from the TaterRater resources")
    }
    return url
  }

  /// The varieties of a file with one per line, in file order: blank lines skipped, a variety listed
  /// twice kept once (the bundled file lists Sieglinde twice, and varieties are unique).
  /// - Throws: `.io` naming the file when it cannot be read or is not UTF-8 text (with the offset and
  ///   line of the first bad byte).
  public static func varieties(in url: URL) throws -> [String] {
    let data: Data
    do {
      data = try Data(contentsOf: url)
    } catch {
      throw StoreError(.io, "cannot read \(url.path): \(error.localizedDescription)")
    }
    if let invalid = InvalidUTF8.first(in: data) {
      throw StoreError(.io, "\(url.path) is not UTF-8 text: \(invalid)")
    }
    let text = String(decoding: data, as: UTF8.self)
    var seen = Set<String>()
    return text.split(whereSeparator: \.isNewline)
      .map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty && seen.insert($0).inserted }
  }
}

/// Crowd ratings from 0.0 to 4.9 in steps of 0.1: reproducible with a seed, random without one.
public struct CrowdRatings: Sendable {
  private var generator: SplitMix64

  public init(seed: UInt64? = nil) {
    generator = SplitMix64(seed: seed ?? UInt64.random(in: .min ... .max))
  }

  public mutating func next() -> Float {
    Float(Int.random(in: 0...49, using: &generator)) / 10
  }
}
