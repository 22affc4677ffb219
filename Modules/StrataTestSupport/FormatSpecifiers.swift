/// The characters that follow a `%` outside quoted strings of a predicate format (`@`, `K`, `d`, …), in
/// order: what the fuzz tests supply arguments for, so that mutated inputs reach the parser.
///
/// ```swift
/// #expect(formatSpecifiers(in: "title == %@ AND year > %d AND note == '%@'") == ["@", "d"])
/// ```
public func formatSpecifiers(in format: String) -> [Character] {
  var specifiers: [Character] = []
  var quote: Character?
  var previous: Character = " "
  var escaped = false
  for ch in format {
    defer { previous = ch }
    if escaped {
      escaped = false
      continue
    }
    if let q = quote {
      if ch == "\\" { escaped = true } else if ch == q { quote = nil }
      continue
    }
    if ch == "'" || ch == "\"" {
      quote = ch
      continue
    }
    if previous == "%" { specifiers.append(ch) }
  }
  return specifiers
}
