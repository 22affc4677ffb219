import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteFunctions {
  /// `strata_json(column, test)`: 1 when the comparison `test` (a `JSONComparison.Test` as JSON) holds for
  /// the Codable attribute's stored text, else 0. It runs `JSONComparison`, so SQLite answers exactly as
  /// the evaluator does (string options, `LIKE`, `MATCHES`, numbers across types).
  static let jsonFunction = "strata_json"

  /// The JSON text of the test `strata_json` runs for `comparison` (checked) on the Codable key path `path`.
  static func jsonTest(_ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value) -> String {
    let test = JSONComparison.Test(
      access: .init(members: path.members, fold: path.memberFold), modifier: comparison.modifier, op: comparison.op,
      options: comparison.options, rhs: rhs)
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return (try? encoder.encode(test)).map { String(decoding: $0, as: UTF8.self) } ?? ""
  }

  /// The test last decoded, by its text: a fetch calls `strata_json` once per row with the same text.
  static let lastJSONTest = Locked<(text: String, test: JSONComparison.Test)?>(nil)

  static func decodeJSONTest(_ text: String) -> JSONComparison.Test? {
    if let last = lastJSONTest.withLock({ $0 }), last.text == text { return last.test }
    guard let test = try? JSONDecoder().decode(JSONComparison.Test.self, from: Data(text.utf8)) else { return nil }
    lastJSONTest.withLock { $0 = (text, test) }
    return test
  }
}

let jsonOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 2, let arguments, let text = SQLiteFunctions.string(arguments[1]),
    let test = SQLiteFunctions.decodeJSONTest(text)
  else {
    sqlite3_result_error(context, "strata_json expects a column and a test", -1)
    return
  }
  do {
    sqlite3_result_int(context, try JSONComparison.holds(SQLiteFunctions.value(arguments[0]), test) ? 1 : 0)
  } catch let error as StoreError {
    sqlite3_result_error(context, error.message, -1)
  } catch {
    sqlite3_result_error(context, "\(error)", -1)
  }
}
