// Fails when a public symbol has no documentation comment (run by scripts/docs).
//
// Usage: swift scripts/docs-coverage.swift SYMBOL-GRAPH-DIR…
//
// Reads every `*.symbols.json` in the directories (the symbol graphs the DocC plugin extracted for a
// module, including its extensions of other modules' types) and lists each public or open symbol without a
// doc comment as `FILE:LINE: undocumented KIND NAME`, then exits 1 if there was one. A symbol that
// implements a protocol requirement or overrides a method without a comment of its own carries the
// requirement's comment in the graph (the compiler's inherited docs) and counts as documented, as it does
// in DocC. Skipped: the placeholders for extended types (`swift.extension`, not declarations of ours),
// symbols without a source location (members the compiler synthesizes, such as `hash(into:)`, and
// standard-library defaults) and symbols with a component starting with `_` (DocC hides them).
import Foundation

var missing: [String] = []
var checked = 0
for directory in CommandLine.arguments.dropFirst() {
  let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
  guard files.contains(where: { $0.hasSuffix(".symbols.json") }) else {
    print("docs-coverage: no symbol graphs in \(directory)")
    exit(2)
  }
  for file in files.sorted() where file.hasSuffix(".symbols.json") {
    let data = try Data(contentsOf: URL(fileURLWithPath: directory).appending(path: file))
    guard let graph = try JSONSerialization.jsonObject(with: data) as? [String: Any],
      let symbols = graph["symbols"] as? [[String: Any]]
    else { continue }
    for symbol in symbols {
      let access = symbol["accessLevel"] as? String ?? ""
      let kind = (symbol["kind"] as? [String: Any])?["identifier"] as? String ?? ""
      let path = symbol["pathComponents"] as? [String] ?? []
      guard access == "public" || access == "open", kind != "swift.extension",
        !path.contains(where: { $0.hasPrefix("_") })
      else { continue }
      let lines = ((symbol["docComment"] as? [String: Any])?["lines"] as? [[String: Any]]) ?? []
      let text = lines.compactMap { $0["text"] as? String }.joined().trimmingCharacters(in: .whitespaces)
      // No location: a member the compiler synthesized or a standard-library default (`hash(into:)`).
      guard let location = symbol["location"] as? [String: Any] else { continue }
      checked += 1
      if !text.isEmpty { continue }
      let uri = (location["uri"] as? String).flatMap { URL(string: $0)?.path } ?? "?"
      let line = ((location["position"] as? [String: Any])?["line"] as? Int).map { $0 + 1 } ?? 0
      let relative =
        uri.hasPrefix(FileManager.default.currentDirectoryPath + "/")
        ? String(uri.dropFirst(FileManager.default.currentDirectoryPath.count + 1)) : uri
      let shortKind = kind.replacingOccurrences(of: "swift.", with: "")
      missing.append("\(relative):\(line): undocumented \(shortKind) \(path.joined(separator: "."))")
    }
  }
}
for line in Set(missing).sorted() { print(line) }
let count = Set(missing).count
print("docs-coverage: \(checked - count) of \(checked) public symbols documented")
exit(count == 0 ? 0 : 1)
