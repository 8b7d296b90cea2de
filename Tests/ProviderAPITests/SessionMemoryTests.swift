import CNGHTTP2
import Testing

/// The libnghttp2 session's allocator (`SessionMemory.c`), called as the session calls it: blocks keep
/// their bytes through a reallocation, a zeroed block is zero even when reused, freed blocks are reused
/// and kept only up to the limit, and a trim gives them all back.
@Suite struct SessionMemoryTests {
    final class Memory {
        let pointer: OpaquePointer
        let mem: nghttp2_mem
        init(limit: Int) {
            pointer = pushgate_session_memory_new(limit)!
            mem = pushgate_session_memory_nghttp2(pointer)
        }
        deinit { pushgate_session_memory_del(pointer) }
        var cached: Int { pushgate_session_memory_cached(pointer) }
        func allocate(_ size: Int) -> UnsafeMutableRawPointer { mem.malloc(size, mem.mem_user_data)! }
        func zeroed(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? {
            mem.calloc(count, size, mem.mem_user_data)
        }
        func reallocate(_ block: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer {
            mem.realloc(block, size, mem.mem_user_data)!
        }
        func free(_ block: UnsafeMutableRawPointer?) { mem.free(block, mem.mem_user_data) }
    }

    static func fill(_ block: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) {
        for index in 0..<count {
            block.storeBytes(of: seed &+ UInt8(truncatingIfNeeded: index), toByteOffset: index, as: UInt8.self)
        }
    }

    static func holds(_ block: UnsafeMutableRawPointer, _ count: Int, seed: UInt8) -> Bool {
        (0..<count).allSatisfy {
            block.load(fromByteOffset: $0, as: UInt8.self) == seed &+ UInt8(truncatingIfNeeded: $0)
        }
    }

    @Test func aFreedBlockIsReusedForTheSameSizeClassAndZeroedWhenAskedFor() {
        let memory = Memory(limit: 1 << 20)
        for size in [0, 1, 63, 64, 65, 500, 1024] {
            let block = memory.allocate(size)
            Self.fill(block, size, seed: 0xAA)
            memory.free(block)
            #expect(memory.cached > 0)
            let again = memory.zeroed(1, size)!
            #expect(again == block, "\(size) bytes: the kept block")
            #expect((0..<size).allSatisfy { again.load(fromByteOffset: $0, as: UInt8.self) == 0 })
            memory.free(again)
        }
        let large = memory.allocate(5000)
        Self.fill(large, 5000, seed: 3)
        let cached = memory.cached
        memory.free(large)
        #expect(memory.cached == cached, "a block over 1 KiB goes back to the C library")
        #expect(memory.zeroed(Int.max, 2) == nil, "an overflowing count times size")
    }

    @Test func aReallocatedBlockKeepsItsBytesAcrossClassesAndIntoLargeBlocks() {
        let memory = Memory(limit: 1 << 20)
        var block = memory.reallocate(nil, 10)
        var size = 10
        Self.fill(block, size, seed: 7)
        for next in [20, 64, 65, 300, 1024, 1025, 4000, 9000, 100] {
            block = memory.reallocate(block, next)
            #expect(Self.holds(block, min(size, next), seed: 7), "\(size) → \(next) bytes")
            size = next
            Self.fill(block, size, seed: 7)
        }
        memory.free(block)
        memory.free(nil)
    }

    @Test func keptBlocksStayUnderTheLimitAndATrimGivesThemBack() {
        let memory = Memory(limit: 4096)
        let blocks = (0..<200).map { memory.allocate(64 + $0 % 700) }
        for block in blocks { memory.free(block) }
        #expect(memory.cached > 0 && memory.cached <= 4096)
        pushgate_session_memory_trim(memory.pointer)
        #expect(memory.cached == 0)
        let block = memory.allocate(100)
        memory.free(block)
        #expect(memory.cached == 128)
    }
}
