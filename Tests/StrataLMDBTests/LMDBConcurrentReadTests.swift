import Foundation
import StrataStoreKit
import Synchronization
import Testing

@testable import StrataLMDB

@Suite("LMDB reads on many threads")
struct LMDBConcurrentReadTests {
  /// A resize waits for the shared holder inside, and a holder that arrives while it waits enters only
  /// after it: the order of events is fixed whatever the threads' timing.
  @Test func theResizeGateRunsAResizeAloneAndFirst() {
    let gate = ResizeGate()
    let log = EventLog()
    let note: @Sendable (String) -> Void = { event in log.events.withLock { $0.append(event) } }
    let holderIn = DispatchSemaphore(value: 0)
    let holderMayLeave = DispatchSemaphore(value: 0)
    let resizeIn = DispatchSemaphore(value: 0)
    let resizeMayEnd = DispatchSemaphore(value: 0)
    let all = DispatchGroup()
    onThread(all) {
      gate.concurrently {
        note("holder in")
        holderIn.signal()
        holderMayLeave.wait()
        note("holder out")
      }
    }
    holderIn.wait()
    onThread(all) {
      gate.exclusive {
        note("resize in")
        resizeIn.signal()
        resizeMayEnd.wait()
        note("resize out")
      }
    }
    let deadline = Date(timeIntervalSinceNow: 30)
    while !gate.resizeIsWaiting && Date() < deadline { usleep(1_000) }
    #expect(gate.resizeIsWaiting)
    onThread(all) { gate.concurrently { note("late holder") } }
    // Time for a gate that let either in too early to do so.
    usleep(50_000)
    holderMayLeave.signal()
    resizeIn.wait()
    usleep(50_000)
    resizeMayEnd.signal()
    all.wait()
    #expect(log.events.withLock { $0 } == ["holder in", "holder out", "resize in", "resize out", "late holder"])
    #expect(!gate.resizeIsWaiting)
  }

  /// Many threads entering and leaving shared while one resizes now and then: no holder is ever inside
  /// with the resize.
  @Test func theResizeGateKeepsSharedHoldersOutOfAResize() {
    let gate = ResizeGate()
    let inside = Atomic<Int>(0)
    let resizing = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let resizes = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: 6) { worker in
      for round in 0..<2_000 {
        if worker == 0 && round % 50 == 0 {
          gate.exclusive {
            if inside.load(ordering: .sequentiallyConsistent) != 0 { overlaps.add(1, ordering: .relaxed) }
            resizing.store(true, ordering: .sequentiallyConsistent)
            for _ in 0..<100 where inside.load(ordering: .sequentiallyConsistent) != 0 { overlaps.add(1, ordering: .relaxed) }
            resizing.store(false, ordering: .sequentiallyConsistent)
            resizes.add(1, ordering: .relaxed)
          }
        } else {
          gate.concurrently {
            inside.add(1, ordering: .sequentiallyConsistent)
            if resizing.load(ordering: .sequentiallyConsistent) { overlaps.add(1, ordering: .relaxed) }
            inside.subtract(1, ordering: .sequentiallyConsistent)
          }
        }
      }
    }
    #expect(overlaps.load(ordering: .relaxed) == 0)
    #expect(resizes.load(ordering: .relaxed) == 40)
    #expect(inside.load(ordering: .relaxed) == 0)
  }

  /// Threads reading single objects (each reusing the kept read transaction) while this one saves enough
  /// to double the map several times: every read finds the record it asked for, whole, and a read on the
  /// saving thread right after a save sees it.
  @Test func singleReadsOnManyThreadsWhileTheMapGrows() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    defer { store.close() }
    let seeded = (0..<200).map { note("seed-\($0)", $0) }
    let result = try store.save(ChangeSet(inserted: seeded))
    let ids = result.insertedIDs
    #expect(ids.count == seeded.count)
    let startSize = store.environment.mapSize
    let wrong = Atomic<Int>(0)
    let reads = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let readers = DispatchGroup()
    for worker in 0..<3 {
      onThread(readers) {
        var position = worker
        while !stop.load(ordering: .relaxed) {
          position = (position &* 31 &+ 7) % ids.count
          let snapshot = try? store.snapshot(for: ids[position], generation: nil)
          if snapshot?.attributes.first?.stringValue != "seed-\(position)" || snapshot?.attributes[1] != .int(Int64(position)) {
            wrong.add(1, ordering: .relaxed)
          }
          reads.add(1, ordering: .relaxed)
        }
      }
    }
    let deadline = Date(timeIntervalSinceNow: 30)
    while reads.load(ordering: .relaxed) < 300 && Date() < deadline { usleep(1_000) }
    let chunk = Data(repeating: 3, count: 64 << 10)
    var missedOwnWrite = 0
    for i in 0..<48 {
      let change = note("big-\(i)", 1_000 + i, payload: chunk)
      let saved = try store.save(ChangeSet(inserted: [change]))
      let id = try #require(saved.insertedIDs.first)
      if try store.snapshot(for: id, generation: nil)?.attributes.first?.stringValue != "big-\(i)" { missedOwnWrite += 1 }
    }
    stop.store(true, ordering: .relaxed)
    readers.wait()
    #expect(store.environment.mapSize >= startSize * 4)
    #expect(reads.load(ordering: .relaxed) >= 300)
    #expect(wrong.load(ordering: .relaxed) == 0)
    #expect(missedOwnWrite == 0)
    #expect(try count(store) == 248)
  }
}

/// Runs `body` on a thread of its own (not the dispatch pool, which other tests' waits may fill), entered
/// in `group` until it returns.
private func onThread(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
  group.enter()
  Thread {
    body()
    group.leave()
  }.start()
}

private final class EventLog: Sendable {
  let events = Mutex<[String]>([])
}
