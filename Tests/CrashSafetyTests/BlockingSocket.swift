import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP client on a plain socket that never reads: a small receive buffer, non-blocking sends.
final class BlockingSocket: Sendable {
    let descriptor: Int32

    init(port: Int, receiveBuffer: Int32) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size = receiveBuffer
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    }

    /// Writes what the socket takes now of `bytes`: how many (0 when it is full or failed).
    func write(_ bytes: [UInt8]) -> Int {
        let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return max(0, written)
    }

    /// Waits until the socket takes more, or `milliseconds` pass.
    func waitWritable(milliseconds: Int32) {
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        _ = poll(&poller, 1, milliseconds)
    }

    /// The peer closed or reset the connection (asked of the kernel, without reading).
    var isClosedByPeer: Bool {
        var poller = pollfd(fd: descriptor, events: 0, revents: 0)
        _ = poll(&poller, 1, 0)
        if poller.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
        // A peer's FIN behind unread data shows only as a failed send (EPIPE or ECONNRESET).
        let probe: [UInt8] = Array(repeating: 0, count: 0)
        return probe.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, 0, Int32(MSG_NOSIGNAL)) } < 0
            && (errno == EPIPE || errno == ECONNRESET)
    }

    func close() { _ = Glibc.close(descriptor) }
}
