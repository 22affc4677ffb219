import Foundation
import StrataStoreKit

/// Remembers, in `.strata-validated` beside `data.mdb`, the state in which Strata last walked the file
/// (``LMDBPageWalk``) or left it at a clean close: the newer meta page's transaction ID and the file's size,
/// modification time, inode and device. Opening a store whose `data.mdb` is still in that state skips the
/// page walk, so opening costs the same at 1 object and at 1M; any commit (it moves the transaction ID),
/// any write from outside Strata (it moves the modification time), a copy (a new inode) or a crash after
/// a commit makes the states differ, and the next open walks every page as before.
///
/// A state is recorded only once the clock the kernel stamps files with has moved past the file's
/// modification time, so that a change made after the record gets a later time even on a file system with
/// coarse timestamps. A directory the process cannot write keeps no record (and every open walks).
enum LMDBValidationMarker {
  static let fileName = ".strata-validated"

  /// `data.mdb`'s state.
  struct Stamp: Equatable {
    var transactionID: UInt64
    var size: Int64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64
    var inode: UInt64
    var device: UInt64

    var text: String {
      "strata-validated 1 \(transactionID) \(size) \(modifiedSeconds) \(modifiedNanoseconds) \(inode) \(device)\n"
    }

    init(
      transactionID: UInt64, size: Int64, modifiedSeconds: Int64, modifiedNanoseconds: Int64, inode: UInt64,
      device: UInt64
    ) {
      self.transactionID = transactionID
      self.size = size
      self.modifiedSeconds = modifiedSeconds
      self.modifiedNanoseconds = modifiedNanoseconds
      self.inode = inode
      self.device = device
    }

    init?(text: String) {
      let fields = text.split(whereSeparator: \.isWhitespace)
      guard fields.count == 8, fields[0] == "strata-validated", fields[1] == "1",
        let transactionID = UInt64(fields[2]), let size = Int64(fields[3]), let seconds = Int64(fields[4]),
        let nanoseconds = Int64(fields[5]), let inode = UInt64(fields[6]), let device = UInt64(fields[7])
      else { return nil }
      self.init(
        transactionID: transactionID, size: size, modifiedSeconds: seconds, modifiedNanoseconds: nanoseconds,
        inode: inode, device: device)
    }
  }

  /// `data.mdb`'s state now; `nil` when it cannot be read or changes while it is read.
  static func current(directory path: String) -> Stamp? {
    let file = (path as NSString).appendingPathComponent("data.mdb")
    let descriptor = open(file, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    func status() -> stat? {
      var status = stat()
      return fstat(descriptor, &status) == 0 ? status : nil
    }
    guard let before = status(),
      let first = try? LMDBDataFile.readMeta(descriptor, offset: 0),
      let second = try? LMDBDataFile.readMeta(descriptor, offset: first.pageSize),
      let after = status(), before.st_size == after.st_size, before.st_mtim.tv_sec == after.st_mtim.tv_sec,
      before.st_mtim.tv_nsec == after.st_mtim.tv_nsec
    else { return nil }
    return Stamp(
      transactionID: max(first.transactionID, second.transactionID), size: Int64(after.st_size),
      modifiedSeconds: Int64(after.st_mtim.tv_sec), modifiedNanoseconds: Int64(after.st_mtim.tv_nsec),
      inode: UInt64(after.st_ino), device: UInt64(after.st_dev))
  }

  /// Whether `data.mdb` is in the state last recorded.
  static func isValidated(directory path: String) -> Bool {
    let marker = (path as NSString).appendingPathComponent(fileName)
    guard let data = FileManager.default.contents(atPath: marker), data.count < 256,
      let stored = Stamp(text: String(decoding: data, as: UTF8.self)), let now = current(directory: path)
    else { return false }
    return stored == now
  }

  /// Records `data.mdb`'s state, when it is at `transactionID` (any transaction when `nil`) and stays
  /// unchanged until the file clock has moved past its modification time (a few milliseconds at most).
  /// Best effort: nothing is recorded when the directory cannot be written.
  static func record(directory path: String, at transactionID: UInt64? = nil) {
    guard let stamp = current(directory: path), transactionID.map({ $0 == stamp.transactionID }) ?? true else {
      return
    }
    var passed = false
    for _ in 0..<50 {
      var now = timespec()
      clock_gettime(CLOCK_REALTIME_COARSE, &now)
      if (Int64(now.tv_sec), Int64(now.tv_nsec)) > (stamp.modifiedSeconds, stamp.modifiedNanoseconds) {
        passed = true
        break
      }
      usleep(1_000)
    }
    guard passed, current(directory: path) == stamp else { return }
    let marker = (path as NSString).appendingPathComponent(fileName)
    let temporary = marker + ".\(getpid())"
    guard FileManager.default.createFile(atPath: temporary, contents: Data(stamp.text.utf8)) else { return }
    if rename(temporary, marker) != 0 { unlink(temporary) }
  }
}
