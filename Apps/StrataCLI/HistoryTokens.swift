import Foundation
import StrataCore

/// What a history command tells its user about a token the store cannot continue from: the library's
/// advice (`currentHistoryToken()`) is for code, not for someone at a shell.
public func forCommandLine(_ error: StoreError) -> StoreError {
  guard error.code == .historyExpired, let advice = error.message.range(of: "; fetch everything again") else {
    return error
  }
  var message = String(error.message[..<advice.lowerBound])
  message += ": list the whole history without --after-token to see where it stands now"
  return StoreError(error.code, message, entity: error.entity, key: error.key, value: error.value)
}

/// Prints a warning when `token` is ahead of the store's newest (`newest`): a store put back from an older
/// copy, or a token of a later store that had the same identifier. No history follows such a token.
public func warnIfAhead(_ token: HistoryToken?, of newest: HistoryToken?, tool: String) {
  guard let token, token.sequence > (newest?.sequence ?? 0) else { return }
  let line =
    "\(tool): warning: the token \(token) is ahead of the store's history (newest: \(newest.map { "\($0)" } ?? "none")); "
    + "the store may have been put back from an older copy\n"
  FileHandle.standardError.write(Data(line.utf8))
}
