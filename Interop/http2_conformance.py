#!/usr/bin/env python3
"""RFC 9113 (HTTP/2) and RFC 7541 (HPACK) conformance of the provider API, case by case as h2spec checks
a server: its generic, http2 and hpack groups, under h2spec's ids, each on a connection of its own.

h2spec (a Go program) is neither in Debian nor on PyPI, so this is a rewrite of its cases and their
expectations: frames are written by hand (only the Huffman code is taken from `hpack`), and what comes
back is read frame by frame. A case expecting a connection error passes on a GOAWAY with one of the
codes or on the connection closing; a stream error on an RST_STREAM (or a GOAWAY) with one of the codes,
or the connection closing; "alive" on the answer to a PING sent after the case's frames.

    http2_conformance.py --port P [--tls --ca CA.pem] [--host 127.0.0.1] [--timeout 2] [id-prefix …]

Prints a line per case and a summary; exits 1 when a case fails.
"""
import argparse
import socket
import ssl
import struct
import sys
import time

from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, FRAME_SIZE_ERROR = 0x0, 0x1, 0x3, 0x5, 0x6
REFUSED_STREAM, COMPRESSION_ERROR = 0x7, 0x9
HEADER_TABLE_SIZE, ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE = 0x1, 0x2, 0x3, 0x4
MAX_FRAME_SIZE, MAX_HEADER_LIST_SIZE = 0x5, 0x6
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT",
          5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR",
          10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM", 12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED"}
HUFFMAN = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)


class Failure(Exception):
    pass


# --- HPACK, by hand -------------------------------------------------------------------------------


def integer(value, prefix_bits, first=0):
    """RFC 7541 §5.1: `value` with an N-bit prefix; `first` holds the bits above the prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def string(value, huffman=False):
    value = value.encode() if isinstance(value, str) else value
    if huffman:
        value = HUFFMAN.encode(value)
        return integer(len(value), 7, 0x80) + value
    return integer(len(value), 7) + value


def literal(name, value, kind="without", huffman=False):
    """A literal field with a new name: `kind` is incremental (6.2.1), without (6.2.2) or never (6.2.3)."""
    first = {"incremental": 0x40, "without": 0x00, "never": 0x10}[kind]
    return bytes([first]) + string(name, huffman) + string(value, huffman)


def literal_indexed_name(index, value, kind="without", huffman=False):
    prefix, first = {"incremental": (6, 0x40), "without": (4, 0x00), "never": (4, 0x10)}[kind]
    return integer(index, prefix, first) + string(value, huffman)


def indexed(index):
    return integer(index, 7, 0x80)


def block(fields):
    """A header block from (name, value) pairs, each a literal without indexing (no state kept)."""
    return b"".join(literal(name, value) for name, value in fields)


# --- Frames ---------------------------------------------------------------------------------------


def frame(kind, flags, stream, payload=b"", length=None):
    length = len(payload) if length is None else length
    return struct.pack(">I", length)[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings(*pairs, flags=0, stream=0):
    return frame(SETTINGS, flags, stream, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def window_update(stream, increment):
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def rst_stream(stream, code=0x8):
    return frame(RST_STREAM, 0, stream, struct.pack(">I", code))


def priority(stream, depends_on=0, weight=15, exclusive=False):
    return frame(PRIORITY, 0, stream, struct.pack(">IB", depends_on | (0x80000000 if exclusive else 0), weight))


def ping(data=b"h2spec\x00\x00", flags=0, stream=0):
    return frame(PING, flags, stream, data)


def goaway(last=0, code=NO_ERROR, stream=0):
    return frame(GOAWAY, 0, stream, struct.pack(">II", last, code))


class Connection:
    def __init__(self, options):
        self.options = options
        raw = socket.create_connection((options.host, options.port), timeout=options.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if options.tls:
            context = ssl.create_default_context(cafile=options.ca)
            context.check_hostname = False
            context.set_alpn_protocols(["h2"])
            raw = context.wrap_socket(raw, server_hostname="localhost")
            if raw.selected_alpn_protocol() != "h2":
                raise Failure(f"ALPN chose {raw.selected_alpn_protocol()!r}, not h2")
        self.sock = raw
        self.buffer = b""
        self.closed = False
        self.server_settings = {}
        self.pings = 0

    def send(self, *frames):
        try:
            self.sock.sendall(b"".join(frames))
        except OSError:
            self.closed = True

    def handshake(self):
        """The preface and our SETTINGS; done once the server's SETTINGS came and ours were acknowledged."""
        self.send(PREFACE, settings())
        got_settings = got_ack = False
        deadline = time.monotonic() + self.options.timeout
        while not (got_settings and got_ack):
            f = self.read(deadline)
            if f is None:
                raise Failure("the handshake did not finish (no SETTINGS, or ours not acknowledged)")
            kind, flags, _, payload = f
            if kind == SETTINGS and flags & ACK:
                got_ack = True
            elif kind == SETTINGS:
                for i in range(0, len(payload), 6):
                    key, value = struct.unpack(">HI", payload[i:i + 6])
                    self.server_settings[key] = value
                self.send(settings(flags=ACK))
                got_settings = True
            elif kind == GOAWAY:
                raise Failure("GOAWAY during the handshake: " + describe(f))

    def read(self, deadline):
        """The next frame (kind, flags, stream, payload), or None at the deadline or when closed."""
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    header, self.buffer = self.buffer[:9 + length], self.buffer[9 + length:]
                    stream = struct.unpack(">I", header[5:9])[0] & 0x7FFFFFFF
                    return header[3], header[4], stream, header[9:]
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except (OSError, ssl.SSLError):
                chunk = b""
            if not chunk:
                self.closed = True
            self.buffer += chunk

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def describe(f):
    kind, flags, stream, payload = f
    names = ["DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY",
             "WINDOW_UPDATE", "CONTINUATION"]
    name = names[kind] if kind < len(names) else f"type {kind}"
    if kind == GOAWAY and len(payload) >= 8:
        code = struct.unpack(">I", payload[4:8])[0]
        return f"GOAWAY {ERRORS.get(code, code)} {payload[8:].decode(errors='replace')}".strip()
    if kind == RST_STREAM and len(payload) >= 4:
        code = struct.unpack(">I", payload[:4])[0]
        return f"RST_STREAM {ERRORS.get(code, code)} on stream {stream}"
    return f"{name} (flags {flags:#x}, stream {stream}, {len(payload)} bytes)"


def codes_text(codes):
    return " or ".join(ERRORS[c] for c in codes)


# --- Expectations ---------------------------------------------------------------------------------


def expect_connection_error(c, *codes):
    """h2spec's VerifyConnectionError: a GOAWAY with one of the codes, or the connection closing (after a
    GOAWAY with another code too)."""
    wait_for_error(c, (GOAWAY,), codes, "a connection error")


def expect_stream_error(c, *codes):
    """h2spec's VerifyStreamError: an RST_STREAM or a GOAWAY with one of the codes, or the connection
    closing."""
    wait_for_error(c, (GOAWAY, RST_STREAM), codes, "a stream error")


def wait_for_error(c, kinds, codes, what):
    deadline = time.monotonic() + c.options.timeout
    seen = []
    while True:
        f = c.read(deadline)
        if f is None:
            if c.closed:
                return
            raise Failure(f"expected {what} ({codes_text(codes)}); got {seen or 'nothing'}")
        if f[0] in kinds:
            code = struct.unpack(">I", f[3][4:8] if f[0] == GOAWAY else f[3][:4])[0]
            if code in codes:
                return
        seen.append(describe(f))


def wait_for(c, what, done, refused=lambda f: f[0] == GOAWAY):
    """Reads frames until one that `done` accepts (returned); fails on one `refused` names, at the deadline,
    or when the connection closes."""
    deadline = time.monotonic() + c.options.timeout
    while True:
        f = c.read(deadline)
        if f is None:
            raise Failure(f"expected {what}; " + ("the connection closed" if c.closed else "nothing came in time"))
        if done(f):
            return f
        if refused(f):
            raise Failure(f"expected {what}; got {describe(f)}")


def ends_stream(stream):
    """A GOAWAY, or a reset of `stream`."""
    return lambda f: f[0] == GOAWAY or (f[0] == RST_STREAM and f[2] == stream)


def expect_response(c, stream):
    wait_for(c, f"a response on stream {stream}", lambda f: f[0] in (HEADERS, DATA) and f[2] == stream,
             ends_stream(stream))


def expect_alive(c):
    """A PING answered: nothing of the case ended the connection (frames before the answer are fine,
    but not a GOAWAY)."""
    c.pings += 1
    data = struct.pack(">Q", 0x7065726B00000000 + c.pings)
    c.send(ping(data))
    wait_for(c, "the connection alive (our PING answered)", lambda f: f[0] == PING and f[1] & ACK and f[3] == data)


def expect_ping_ack(c, data):
    wait_for(c, "a PING acknowledgement with our data", lambda f: f[0] == PING and f[1] & ACK and f[3] == data,
             lambda f: f[0] in (GOAWAY, PING))


def expect_settings_ack(c):
    wait_for(c, "a SETTINGS acknowledgement", lambda f: f[0] == SETTINGS and f[1] & ACK)


def expect_data(c, stream, length):
    f = wait_for(c, f"DATA on stream {stream}", lambda f: f[0] == DATA and f[2] == stream, ends_stream(stream))
    if len(f[3]) != length:
        raise Failure(f"expected DATA of {length} bytes; got {len(f[3])}")


def expect_settings(c):
    if not c.server_settings and not c.buffer:
        raise Failure("no SETTINGS from the server")


# --- Requests -------------------------------------------------------------------------------------


class Request:
    def __init__(self, options):
        self.scheme = "https" if options.tls else "http"
        self.authority = f"{options.host}:{options.port}"

    def fields(self, method="POST", path="/3/device/" + "ab" * 32, extra=()):
        return [(":method", method), (":scheme", self.scheme), (":path", path), (":authority", self.authority),
                *extra]

    def headers(self, stream, method="POST", end_stream=True, extra=()):
        payload = block(self.fields(method, extra=extra))
        return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream, payload)


CASES = []


def case(case_id, title):
    def register(function):
        CASES.append((case_id, title, function))
        return function
    return register


def sends(case_id, title, frames, expect, *codes):
    """A case that sends `frames(request)` on a fresh connection and expects `expect(connection, *codes)`."""
    def _(c, r):
        c.send(*frames(r))
        expect(c, *codes)
    case(case_id, title)(_)


# --- generic --------------------------------------------------------------------------------------


@case("generic/1/1", "Sends a client connection preface")
def _(c, r):
    expect_settings(c)


sends("generic/2/1", "Sends a PRIORITY frame on idle stream",
      lambda r: [priority(1, depends_on=0, weight=15)], expect_alive)


sends("generic/2/2", "Sends a WINDOW_UPDATE frame on half-closed (remote) stream",
      lambda r: [r.headers(1), window_update(1, 1)], expect_alive)


sends("generic/2/3", "Sends a PRIORITY frame on half-closed (remote) stream",
      lambda r: [r.headers(1), priority(1, depends_on=0, weight=15)], expect_alive)


sends("generic/2/4", "Sends a RST_STREAM frame on half-closed (remote) stream",
      lambda r: [r.headers(1), rst_stream(1, 0x8)], expect_alive)


@case("generic/2/5", "Sends a PRIORITY frame on closed stream")
def _(c, r):
    c.send(r.headers(1))
    expect_response(c, 1)
    c.send(priority(1, depends_on=0, weight=15))
    expect_alive(c)


sends("generic/3.1/1", "Sends a DATA frame",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM, 1, b"{}")], expect_response, 1)


sends("generic/3.1/2", "Sends multiple DATA frames",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, 0, 1, b"{"), frame(DATA, END_STREAM, 1, b"}")], expect_response, 1)


sends("generic/3.1/3", "Sends a DATA frame with padding",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM | PADDED, 1, bytes([8]) + b"{}" + bytes(8))], expect_response, 1)


sends("generic/3.2/1", "Sends a HEADERS frame",
      lambda r: [r.headers(1)], expect_response, 1)


@case("generic/3.2/2", "Sends a HEADERS frame with padding")
def _(c, r):
    payload = bytes([8]) + block(r.fields()) + bytes(8)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS | PADDED, 1, payload))
    expect_response(c, 1)


@case("generic/3.2/3", "Sends a HEADERS frame with priority")
def _(c, r):
    payload = struct.pack(">IB", 0, 255) + block(r.fields())
    c.send(frame(HEADERS, END_STREAM | END_HEADERS | PRIORITY_FLAG, 1, payload))
    expect_response(c, 1)


sends("generic/3.3/1", "Sends a PRIORITY frame with priority 1",
      lambda r: [priority(1, weight=0)], expect_alive)


sends("generic/3.3/2", "Sends a PRIORITY frame with priority 256",
      lambda r: [priority(1, weight=255)], expect_alive)


sends("generic/3.3/3", "Sends a PRIORITY frame with stream dependency",
      lambda r: [r.headers(1, end_stream=False), priority(3, depends_on=1)], expect_alive)


sends("generic/3.3/4", "Sends a PRIORITY frame with exclusive",
      lambda r: [r.headers(1, end_stream=False), priority(3, depends_on=1, exclusive=True)], expect_alive)


sends("generic/3.3/5", "Sends a PRIORITY frame for an idle stream, then send a HEADER frame for a lower stream ID",
      lambda r: [priority(3), r.headers(1)], expect_response, 1)


sends("generic/3.4/1", "Sends a RST_STREAM frame",
      lambda r: [r.headers(1, end_stream=False), rst_stream(1, 0x8)], expect_alive)


for number, (key, value) in enumerate([(HEADER_TABLE_SIZE, 4096), (ENABLE_PUSH, 0), (MAX_CONCURRENT_STREAMS, 100),
                                       (INITIAL_WINDOW_SIZE, 65535), (MAX_FRAME_SIZE, 16384),
                                       (MAX_HEADER_LIST_SIZE, 65535)], start=1):
    name = {1: "SETTINGS_HEADER_TABLE_SIZE", 2: "SETTINGS_ENABLE_PUSH", 3: "SETTINGS_MAX_CONCURRENT_STREAMS",
            4: "SETTINGS_INITIAL_WINDOW_SIZE", 5: "SETTINGS_MAX_FRAME_SIZE", 6: "SETTINGS_MAX_HEADER_LIST_SIZE"}[key]

    def _(c, r, key=key, value=value):
        c.send(settings((key, value)))
        expect_settings_ack(c)
    case(f"generic/3.5/{number}", f"Sends a SETTINGS frame with {name}")(_)


@case("generic/3.6/1", "Sends a PING frame")
def _(c, r):
    c.send(ping(b"12345678"))
    expect_ping_ack(c, b"12345678")


def expect_no_error(c):
    """After the client's GOAWAY: the server answers a PING or closes, and reports no error."""
    c.send(ping(b"goaway!!"))
    deadline = time.monotonic() + c.options.timeout
    while True:
        f = c.read(deadline)
        if f is None:
            if c.closed:
                return
            raise Failure("neither a PING answer nor a close")
        if f[0] == PING and f[1] & ACK:
            return
        if f[0] == GOAWAY and struct.unpack(">I", f[3][4:8])[0] != NO_ERROR:
            raise Failure("an error for the client's GOAWAY: " + describe(f))


sends("generic/3.7/1", "Sends a GOAWAY frame", lambda r: [goaway(0, NO_ERROR)], expect_no_error)


sends("generic/3.8/1", "Sends a WINDOW_UPDATE frame with arbitrary increment value",
      lambda r: [window_update(0, 1)], expect_alive)


sends("generic/3.8/2", "Sends a WINDOW_UPDATE frame with arbitrary increment value on a stream",
      lambda r: [r.headers(1, end_stream=False), window_update(1, 1), frame(DATA, END_STREAM, 1, b"{}")], expect_response, 1)


def split_request(r, stream, pieces, end_stream=True):
    payload = block(r.fields())
    size = -(-len(payload) // pieces)
    chunks = [payload[i:i + size] for i in range(0, len(payload), size)]
    frames = [frame(HEADERS, END_STREAM if end_stream else 0, stream, chunks[0])]
    for i, chunk in enumerate(chunks[1:], start=1):
        frames.append(frame(CONTINUATION, END_HEADERS if i == len(chunks) - 1 else 0, stream, chunk))
    return frames


sends("generic/3.9/1", "Sends a CONTINUATION frame",
      lambda r: [*split_request(r, 1, 2)], expect_response, 1)


sends("generic/3.9/2", "Sends multiple CONTINUATION frames",
      lambda r: [*split_request(r, 1, 4)], expect_response, 1)


sends("generic/4/1", "Sends a GET request",
      lambda r: [r.headers(1, method="GET")], expect_response, 1)


sends("generic/4/2", "Sends a HEAD request",
      lambda r: [r.headers(1, method="HEAD")], expect_response, 1)


sends("generic/4/3", "Sends a POST request",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM, 1, b"{}")], expect_response, 1)


@case("generic/4/4", "Sends a POST request with trailers")
def _(c, r):
    c.send(r.headers(1, end_stream=False), frame(DATA, 0, 1, b"{}"),
           frame(HEADERS, END_STREAM | END_HEADERS, 1, block([("trailer", "value")])))
    expect_response(c, 1)


def hpack_case(number, title, representation):
    def _(c, r):
        fields = b"".join(literal(name, value) for name, value in r.fields())
        c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, fields + representation))
        expect_response(c, 1)
    case(f"generic/5/{number}", title)(_)


# Each adds one field in the representation: accept-encoding (16 in the static table), user-agent (58), or
# a new name.
hpack_case(1, "Sends a indexed header field representation", indexed(16))
hpack_case(2, "Sends a literal header field with incremental indexing - indexed name",
           literal_indexed_name(58, "h2spec", "incremental"))
hpack_case(3, "Sends a literal header field with incremental indexing - indexed name (with Huffman coding)",
           literal_indexed_name(58, "h2spec", "incremental", huffman=True))
hpack_case(4, "Sends a literal header field with incremental indexing - new name",
           literal("x-h2spec", "h2spec", "incremental"))
hpack_case(5, "Sends a literal header field with incremental indexing - new name (with Huffman coding)",
           literal("x-h2spec", "h2spec", "incremental", huffman=True))
hpack_case(6, "Sends a literal header field without indexing - indexed name", literal_indexed_name(58, "h2spec"))
hpack_case(7, "Sends a literal header field without indexing - indexed name (with Huffman coding)",
           literal_indexed_name(58, "h2spec", huffman=True))
hpack_case(8, "Sends a literal header field without indexing - new name", literal("x-h2spec", "h2spec"))
hpack_case(9, "Sends a literal header field without indexing - new name (huffman encoded)",
           literal("x-h2spec", "h2spec", huffman=True))
hpack_case(10, "Sends a literal header field never indexed - indexed name",
           literal_indexed_name(58, "h2spec", "never"))
hpack_case(11, "Sends a literal header field never indexed - indexed name (huffman encoded)",
           literal_indexed_name(58, "h2spec", "never", huffman=True))
hpack_case(12, "Sends a literal header field never indexed - new name", literal("x-h2spec", "h2spec", "never"))
hpack_case(13, "Sends a literal header field never indexed - new name (huffman encoded)",
           literal("x-h2spec", "h2spec", "never", huffman=True))


sends("generic/5/14", "Sends a dynamic table size update",
      lambda r: [frame(HEADERS, END_STREAM | END_HEADERS, 1, integer(2048, 5, 0x20) + block(r.fields()))], expect_response, 1)


@case("generic/5/15", "Sends multiple dynamic table size update")
def _(c, r):
    updates = integer(0, 5, 0x20) + integer(4096, 5, 0x20)
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, updates + block(r.fields())))
    expect_response(c, 1)


# --- http2 ----------------------------------------------------------------------------------------


@case("http2/3.5/1", "Sends client connection preface")
def _(c, r):
    expect_settings(c)


def invalid_preface(options):
    c = Connection(options)
    try:
        c.send(b"INVALID CONNECTION PREFACE\r\n\r\n", settings())
        expect_connection_error(c, PROTOCOL_ERROR)
    finally:
        c.close()


sends("http2/4.1/1", "Sends a frame with unknown type",
      lambda r: [frame(0x16, 0, 0, b"\x00" * 8)], expect_alive)


@case("http2/4.1/2", "Sends a frame with undefined flag")
def _(c, r):
    c.send(ping(b"undefine", flags=0x16))
    expect_ping_ack(c, b"undefine")


sends("http2/4.1/3", "Sends a frame with reserved field bit",
      lambda r: [frame(HEADERS, END_STREAM | END_HEADERS, 1 | 0x80000000, block(r.fields()))], expect_response, 1)


sends("http2/4.2/1", "Sends a DATA frame with 2^14 octets in length",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM, 1, b" " * 16384)], expect_response, 1)


@case("http2/4.2/2", "Sends a large size DATA frame that exceeds the SETTINGS_MAX_FRAME_SIZE")
def _(c, r):
    limit = c.server_settings.get(MAX_FRAME_SIZE, 16384)
    c.send(r.headers(1, end_stream=False), frame(DATA, END_STREAM, 1, b" " * (limit + 1)))
    expect_stream_error(c, FRAME_SIZE_ERROR)


@case("http2/4.2/3", "Sends a large size HEADERS frame that exceeds the SETTINGS_MAX_FRAME_SIZE")
def _(c, r):
    limit = c.server_settings.get(MAX_FRAME_SIZE, 16384)
    fields = r.fields(extra=[("x-dummy%d" % i, "x" * 100) for i in range(limit // 100 + 1)])
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, block(fields)))
    expect_connection_error(c, FRAME_SIZE_ERROR)


@case("http2/4.3/1", "Sends invalid header block fragment")
def _(c, r):
    # A literal field with a new name whose string length runs past the block.
    c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, b"\x00\x85\xf2\xb2\x4a\x87\xff\xff\xff\xfd\x25\x42\x7f"))
    expect_connection_error(c, COMPRESSION_ERROR)


def priority_inside_a_header_block(c, r):
    first, *rest = split_request(r, 1, 2)
    c.send(first, priority(1), *rest)
    expect_connection_error(c, PROTOCOL_ERROR)


def headers_inside_a_header_block(c, r):
    first, *rest = split_request(r, 1, 2)
    c.send(first, r.headers(3), *rest)
    expect_connection_error(c, PROTOCOL_ERROR)


# h2spec checks each of these twice, under two sections.
case("http2/4.3/2", "Sends a PRIORITY frame while sending the header blocks")(priority_inside_a_header_block)
case("http2/4.3/3", "Sends a HEADERS frame to another stream while sending the header blocks")(
    headers_inside_a_header_block)
case("http2/6.2/1", "Sends a HEADERS frame without the END_HEADERS flag, and a PRIORITY frame")(
    priority_inside_a_header_block)
case("http2/6.2/2", "Sends a HEADERS frame to another stream while sending a HEADERS frame")(
    headers_inside_a_header_block)


sends("http2/5.1/1", "idle: Sends a DATA frame",
      lambda r: [frame(DATA, END_STREAM, 1, b"test")], expect_connection_error, PROTOCOL_ERROR)


sends("http2/5.1/2", "idle: Sends a RST_STREAM frame",
      lambda r: [rst_stream(1, 0x8)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/5.1/3", "idle: Sends a WINDOW_UPDATE frame",
      lambda r: [window_update(1, 100)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/5.1/4", "idle: Sends a CONTINUATION frame",
      lambda r: [frame(CONTINUATION, END_HEADERS, 1, block(r.fields()))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/5.1/5", "half closed (remote): Sends a DATA frame",
      lambda r: [r.headers(1), frame(DATA, END_STREAM, 1, b"test")], expect_stream_error, STREAM_CLOSED)


sends("http2/5.1/6", "half closed (remote): Sends a HEADERS frame",
      lambda r: [r.headers(1), r.headers(1)], expect_stream_error, STREAM_CLOSED)


sends("http2/5.1/7", "half closed (remote): Sends a CONTINUATION frame",
      lambda r: [r.headers(1), frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")]))], expect_stream_error, STREAM_CLOSED, PROTOCOL_ERROR)


sends("http2/5.1/8", "closed: Sends a DATA frame after sending RST_STREAM frame",
      lambda r: [r.headers(1, end_stream=False), rst_stream(1, 0x8), frame(DATA, END_STREAM, 1, b"test")], expect_stream_error, STREAM_CLOSED)


sends("http2/5.1/9", "closed: Sends a HEADERS frame after sending RST_STREAM frame",
      lambda r: [r.headers(1, end_stream=False), rst_stream(1, 0x8), r.headers(1)], expect_stream_error, STREAM_CLOSED)


@case("http2/5.1/10", "closed: Sends a CONTINUATION frame after sending RST_STREAM frame")
def _(c, r):
    c.send(r.headers(1, end_stream=False), rst_stream(1, 0x8),
           frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")])))
    expect_stream_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


@case("http2/5.1/11", "closed: Sends a DATA frame")
def _(c, r):
    c.send(r.headers(1))
    wait_closed(c, 1)
    c.send(frame(DATA, END_STREAM, 1, b"test"))
    expect_connection_error(c, STREAM_CLOSED)


@case("http2/5.1/12", "closed: Sends a HEADERS frame")
def _(c, r):
    c.send(r.headers(1))
    wait_closed(c, 1)
    c.send(r.headers(1))
    expect_connection_error(c, STREAM_CLOSED)


@case("http2/5.1/13", "closed: Sends a CONTINUATION frame")
def _(c, r):
    c.send(r.headers(1))
    wait_closed(c, 1)
    c.send(frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")])))
    expect_connection_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


def wait_closed(c, stream):
    """Until the server ends its side of `stream` (END_STREAM on a HEADERS or DATA frame)."""
    wait_for(c, f"the end of stream {stream}",
             lambda f: f[0] in (HEADERS, DATA) and f[2] == stream and f[1] & END_STREAM, lambda f: False)


sends("http2/5.1.1/1", "Sends even-numbered stream identifier",
      lambda r: [r.headers(2)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/5.1.1/2", "Sends stream identifier that is numerically smaller than previous",
      lambda r: [r.headers(5), r.headers(3)], expect_connection_error, PROTOCOL_ERROR)


@case("http2/5.1.2/1", "Sends HEADERS frames that causes their advertised concurrent stream limit to be exceeded")
def _(c, r):
    limit = c.server_settings.get(MAX_CONCURRENT_STREAMS)
    if limit is None:
        raise Failure("the server advertises no SETTINGS_MAX_CONCURRENT_STREAMS")
    c.send(*(r.headers(1 + 2 * i, end_stream=False) for i in range(limit + 1)))
    expect_stream_error(c, PROTOCOL_ERROR, REFUSED_STREAM)


@case("http2/5.3.1/1", "Sends HEADERS frame that depends on itself")
def _(c, r):
    payload = struct.pack(">IB", 1, 15) + block(r.fields())
    c.send(frame(HEADERS, END_STREAM | END_HEADERS | PRIORITY_FLAG, 1, payload))
    expect_stream_error(c, PROTOCOL_ERROR)


sends("http2/5.3.1/2", "Sends PRIORITY frame that depend on itself",
      lambda r: [priority(3, depends_on=3)], expect_stream_error, PROTOCOL_ERROR)


@case("http2/5.4.1/1", "Sends an invalid PING frame for connection close")
def _(c, r):
    c.send(frame(PING, 0, 0, b"\x00" * 6))
    expect_connection_error(c, FRAME_SIZE_ERROR)
    deadline = time.monotonic() + c.options.timeout
    while c.read(deadline) is not None:
        pass
    if not c.closed:
        raise Failure("the connection stayed open after the GOAWAY")


@case("http2/5.4.1/2", "Sends an invalid PING frame to receive GOAWAY frame")
def _(c, r):
    c.send(frame(PING, 0, 0, b"\x00" * 6))
    deadline = time.monotonic() + c.options.timeout
    while True:
        f = c.read(deadline)
        if f is None:
            raise Failure("no GOAWAY before the connection ended")
        if f[0] == GOAWAY:
            return


sends("http2/5.5/1", "Sends an unknown extension frame",
      lambda r: [frame(0xFF, 0, 0, b"\x00" * 8)], expect_alive)


@case("http2/5.5/2", "Sends an unknown extension frame in the middle of a header block")
def _(c, r):
    first, *rest = split_request(r, 1, 2)
    c.send(first, frame(0xFF, 0, 1, b"\x00" * 8), *rest)
    expect_connection_error(c, PROTOCOL_ERROR)


sends("http2/6.1/1", "Sends a DATA frame with 0x0 stream identifier",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM, 0, b"test")], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.1/2", "Sends a DATA frame on the stream that is not in \"open\" or \"half-closed (local)\" state",
      lambda r: [r.headers(1), frame(DATA, END_STREAM, 1, b"test")], expect_stream_error, STREAM_CLOSED)


sends("http2/6.1/3", "Sends a DATA frame with invalid pad length",
      lambda r: [r.headers(1, end_stream=False), frame(DATA, END_STREAM | PADDED, 1, bytes([6]) + b"test")], expect_stream_error, PROTOCOL_ERROR)


sends("http2/6.2/3", "Sends a HEADERS frame with 0x0 stream identifier",
      lambda r: [frame(HEADERS, END_STREAM | END_HEADERS, 0, block(r.fields()))], expect_connection_error, PROTOCOL_ERROR)


@case("http2/6.2/4", "Sends a HEADERS frame with invalid pad length")
def _(c, r):
    fields = block(r.fields())
    c.send(frame(HEADERS, END_STREAM | END_HEADERS | PADDED, 1, bytes([len(fields) + 1]) + fields))
    expect_stream_error(c, PROTOCOL_ERROR)


sends("http2/6.3/1", "Sends a PRIORITY frame with 0x0 stream identifier",
      lambda r: [r.headers(1, end_stream=False), frame(PRIORITY, 0, 0, struct.pack(">IB", 0, 15))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.3/2", "Sends a PRIORITY frame with a length other than 5 octets",
      lambda r: [r.headers(1, end_stream=False), frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 15) + b"\x00")], expect_stream_error, FRAME_SIZE_ERROR)


sends("http2/6.4/1", "Sends a RST_STREAM frame with 0x0 stream identifier",
      lambda r: [rst_stream(0, 0x8)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.4/2", "Sends a RST_STREAM frame on a idle stream",
      lambda r: [rst_stream(1, 0x8)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.4/3", "Sends a RST_STREAM frame with a length other than 4 octets",
      lambda r: [r.headers(1, end_stream=False), frame(RST_STREAM, 0, 1, b"\x00\x00\x00\x08\x00")], expect_connection_error, FRAME_SIZE_ERROR)


sends("http2/6.5/1", "Sends a SETTINGS frame with ACK flag and payload",
      lambda r: [frame(SETTINGS, ACK, 0, struct.pack(">HI", INITIAL_WINDOW_SIZE, 65535))], expect_connection_error, FRAME_SIZE_ERROR)


sends("http2/6.5/2", "Sends a SETTINGS frame with a stream identifier other than 0x0",
      lambda r: [settings((INITIAL_WINDOW_SIZE, 65535), stream=1)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.5/3", "Sends a SETTINGS frame with a length other than a multiple of 6 octets",
      lambda r: [frame(SETTINGS, 0, 0, struct.pack(">HI", INITIAL_WINDOW_SIZE, 65535) + b"\x00\x01\x00")], expect_connection_error, FRAME_SIZE_ERROR)


sends("http2/6.5.2/1", "SETTINGS_ENABLE_PUSH (0x2): Sends the value other than 0 or 1",
      lambda r: [settings((ENABLE_PUSH, 2))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.5.2/2", "SETTINGS_INITIAL_WINDOW_SIZE (0x4): Sends the value above the maximum flow control window size",
      lambda r: [settings((INITIAL_WINDOW_SIZE, 2**31))], expect_connection_error, FLOW_CONTROL_ERROR)


sends("http2/6.5.2/3", "SETTINGS_MAX_FRAME_SIZE (0x5): Sends the value below the initial value",
      lambda r: [settings((MAX_FRAME_SIZE, 16383))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.5.2/4", "SETTINGS_MAX_FRAME_SIZE (0x5): Sends the value above the maximum allowed frame size",
      lambda r: [settings((MAX_FRAME_SIZE, 2**24))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.5.2/5", "Sends a SETTINGS frame with unknown identifier",
      lambda r: [settings((0xFF, 1))], expect_settings_ack)


@case("http2/6.5.3/1", "Sends multiple values of SETTINGS_INITIAL_WINDOW_SIZE")
def _(c, r):
    c.send(settings((INITIAL_WINDOW_SIZE, 100), (INITIAL_WINDOW_SIZE, 1)))
    expect_settings_ack(c)
    c.send(r.headers(1, method="GET"))
    expect_data(c, 1, 1)


sends("http2/6.5.3/2", "Sends a SETTINGS frame without ACK flag",
      lambda r: [settings((ENABLE_PUSH, 0))], expect_settings_ack)


@case("http2/6.7/1", "Sends a PING frame")
def _(c, r):
    c.send(ping(b"h2spec!!"))
    expect_ping_ack(c, b"h2spec!!")


@case("http2/6.7/2", "Sends a PING frame with ACK")
def _(c, r):
    c.send(ping(b"invalid!", flags=ACK), ping(b"h2spec!!"))
    expect_ping_ack(c, b"h2spec!!")


sends("http2/6.7/3", "Sends a PING frame with a stream identifier field value other than 0x0",
      lambda r: [ping(b"h2spec!!", stream=1)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.7/4", "Sends a PING frame with a length field value other than 8",
      lambda r: [frame(PING, 0, 0, b"h2spec")], expect_connection_error, FRAME_SIZE_ERROR)


sends("http2/6.8/1", "Sends a GOAWAY frame with a stream identifier other than 0x0",
      lambda r: [goaway(0, NO_ERROR, stream=1)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.9/1", "Sends a WINDOW_UPDATE frame with a flow control window increment of 0",
      lambda r: [window_update(0, 0)], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.9/2", "Sends a WINDOW_UPDATE frame with a flow control window increment of 0 on a stream",
      lambda r: [r.headers(1, end_stream=False), window_update(1, 0)], expect_stream_error, PROTOCOL_ERROR)


sends("http2/6.9/3", "Sends a WINDOW_UPDATE frame with a length other than 4 octets",
      lambda r: [frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1) + b"\x00")], expect_connection_error, FRAME_SIZE_ERROR)


@case("http2/6.9.1/1", "Sends SETTINGS frame to set the initial window size to 1 and sends HEADERS frame")
def _(c, r):
    c.send(settings((INITIAL_WINDOW_SIZE, 1)))
    expect_settings_ack(c)
    c.send(r.headers(1, method="GET"))
    expect_data(c, 1, 1)


sends("http2/6.9.1/2", "Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1",
      lambda r: [window_update(0, 2**31 - 1), window_update(0, 2**31 - 1)], expect_connection_error, FLOW_CONTROL_ERROR)


sends("http2/6.9.1/3", "Sends multiple WINDOW_UPDATE frames increasing the flow control window to above 2^31-1 on a stream",
      lambda r: [r.headers(1, end_stream=False), window_update(1, 2**31 - 1), window_update(1, 2**31 - 1)], expect_stream_error, FLOW_CONTROL_ERROR)


@case("http2/6.9.2/1", "Changes SETTINGS_INITIAL_WINDOW_SIZE after sending HEADERS frame")
def _(c, r):
    c.send(settings((INITIAL_WINDOW_SIZE, 0)))
    expect_settings_ack(c)
    c.send(r.headers(1, method="GET"))
    expect_response(c, 1)
    c.send(settings((INITIAL_WINDOW_SIZE, 1)))
    expect_data(c, 1, 1)


@case("http2/6.9.2/2", "Sends a SETTINGS frame for window size to be negative")
def _(c, r):
    c.send(settings((INITIAL_WINDOW_SIZE, 3)))
    expect_settings_ack(c)
    c.send(r.headers(1, method="GET"))
    expect_data(c, 1, 3)
    c.send(settings((INITIAL_WINDOW_SIZE, 2)))  # the stream's window: 2 - 3 = -1
    c.send(window_update(1, 2))  # now 1
    expect_data(c, 1, 1)


sends("http2/6.9.2/3", "Sends a SETTINGS_INITIAL_WINDOW_SIZE settings with an exceeded maximum window size value",
      lambda r: [settings((INITIAL_WINDOW_SIZE, 2**31))], expect_connection_error, FLOW_CONTROL_ERROR)


sends("http2/6.10/1", "Sends multiple CONTINUATION frames preceded by a HEADERS frame",
      lambda r: [*split_request(r, 1, 3)], expect_response, 1)


@case("http2/6.10/2", "Sends a CONTINUATION frame followed by any frame other than CONTINUATION")
def _(c, r):
    frames = split_request(r, 1, 3)
    c.send(frames[0], frames[1], frame(DATA, END_STREAM, 1, b"test"))
    expect_connection_error(c, PROTOCOL_ERROR)


@case("http2/6.10/3", "Sends a CONTINUATION frame with 0x0 stream identifier")
def _(c, r):
    frames = split_request(r, 1, 2)
    c.send(frames[0], frame(CONTINUATION, END_HEADERS, 0, frames[1][9:]))
    expect_connection_error(c, PROTOCOL_ERROR)


sends("http2/6.10/4", "Sends a CONTINUATION frame preceded by a HEADERS frame with END_HEADERS flag",
      lambda r: [r.headers(1, end_stream=False), frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")]))], expect_connection_error, PROTOCOL_ERROR)


sends("http2/6.10/5", "Sends a CONTINUATION frame preceded by a CONTINUATION frame with END_HEADERS flag",
      lambda r: [*split_request(r, 1, 2, end_stream=False), frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")]))], expect_connection_error, PROTOCOL_ERROR)


@case("http2/6.10/6", "Sends a CONTINUATION frame preceded by a DATA frame")
def _(c, r):
    c.send(r.headers(1, end_stream=False), frame(DATA, 0, 1, b"test"),
           frame(CONTINUATION, END_HEADERS, 1, block([("x-test", "ok")])))
    expect_connection_error(c, PROTOCOL_ERROR)


sends("http2/7/1", "Sends a GOAWAY frame with unknown error code", lambda r: [goaway(0, 0xFF)], expect_no_error)


sends("http2/7/2", "Sends a RST_STREAM frame with unknown error code",
      lambda r: [r.headers(1, end_stream=False), rst_stream(1, 0xFF)], expect_alive)


@case("http2/8.1/1", "Sends a second HEADERS frame without the END_STREAM flag")
def _(c, r):
    c.send(r.headers(1, end_stream=False), frame(DATA, 0, 1, b"test"),
           frame(HEADERS, END_HEADERS, 1, block([("x-trailer", "test")])))
    expect_stream_error(c, PROTOCOL_ERROR)


def malformed(case_id, title, fields_of, trailers=None):
    """A request the server must answer with a stream error PROTOCOL_ERROR (RFC 9113 §8.1.1)."""
    def _(c, r):
        if trailers is None:
            c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, block(fields_of(r))))
        else:
            c.send(frame(HEADERS, END_HEADERS, 1, block(fields_of(r))), frame(DATA, 0, 1, b"{}"),
                   frame(HEADERS, END_STREAM | END_HEADERS, 1, block(trailers)))
        expect_stream_error(c, PROTOCOL_ERROR)
    case(case_id, title)(_)


malformed("http2/8.1.2/1", "Sends a HEADERS frame that contains the header field name in uppercase letters",
          lambda r: r.fields(extra=[("X-TEST", "ok")]))
malformed("http2/8.1.2.1/1", "Sends a HEADERS frame that contains a unknown pseudo-header field",
          lambda r: r.fields(extra=[(":test", "ok")]))
malformed("http2/8.1.2.1/2", "Sends a HEADERS frame that contains the pseudo-header field defined for response",
          lambda r: r.fields(extra=[(":status", "200")]))
malformed("http2/8.1.2.1/3", "Sends a HEADERS frame that contains a pseudo-header field as trailers",
          lambda r: r.fields(), trailers=[(":method", "POST")])
malformed("http2/8.1.2.1/4", "Sends a HEADERS frame that contains a pseudo-header field that appears in a header block after a regular header field",
          lambda r: [("x-test", "ok")] + r.fields())
malformed("http2/8.1.2.2/1", "Sends a HEADERS frame that contains the connection-specific header field",
          lambda r: r.fields(extra=[("connection", "keep-alive")]))
malformed("http2/8.1.2.2/2", "Sends a HEADERS frame that contains the TE header field with any value other than \"trailers\"",
          lambda r: r.fields(extra=[("trailers", "test"), ("te", "trailers, deflate")]))
malformed("http2/8.1.2.3/1", "Sends a HEADERS frame with empty \":path\" pseudo-header field",
          lambda r: [(k, "" if k == ":path" else v) for k, v in r.fields()])
malformed("http2/8.1.2.3/2", "Sends a HEADERS frame that omits \":method\" pseudo-header field",
          lambda r: [(k, v) for k, v in r.fields() if k != ":method"])
malformed("http2/8.1.2.3/3", "Sends a HEADERS frame that omits \":scheme\" pseudo-header field",
          lambda r: [(k, v) for k, v in r.fields() if k != ":scheme"])
malformed("http2/8.1.2.3/4", "Sends a HEADERS frame that omits \":path\" pseudo-header field",
          lambda r: [(k, v) for k, v in r.fields() if k != ":path"])
malformed("http2/8.1.2.3/5", "Sends a HEADERS frame with duplicated \":method\" pseudo-header field",
          lambda r: r.fields()[:1] + r.fields())
malformed("http2/8.1.2.3/6", "Sends a HEADERS frame with duplicated \":scheme\" pseudo-header field",
          lambda r: r.fields()[:2] + r.fields()[1:])
malformed("http2/8.1.2.3/7", "Sends a HEADERS frame with duplicated \":path\" pseudo-header field",
          lambda r: r.fields()[:3] + r.fields()[2:])


@case("http2/8.1.2.6/1", "Sends a HEADERS frame with the \"content-length\" header field which does not equal the DATA frame payload length")
def _(c, r):
    c.send(frame(HEADERS, END_HEADERS, 1, block(r.fields(extra=[("content-length", "1")]))),
           frame(DATA, END_STREAM, 1, b"test"))
    expect_stream_error(c, PROTOCOL_ERROR)


@case("http2/8.1.2.6/2", "Sends a HEADERS frame with the \"content-length\" header field which does not equal the sum of the multiple DATA frames payload length")
def _(c, r):
    c.send(frame(HEADERS, END_HEADERS, 1, block(r.fields(extra=[("content-length", "1")]))),
           frame(DATA, 0, 1, b"test"), frame(DATA, END_STREAM, 1, b"test"))
    expect_stream_error(c, PROTOCOL_ERROR)


sends("http2/8.2/1", "Sends a PUSH_PROMISE frame",
      lambda r: [r.headers(1, end_stream=False), frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + block(r.fields()))], expect_connection_error, PROTOCOL_ERROR)


# --- hpack ----------------------------------------------------------------------------------------


def compression_error(case_id, title, representation):
    def _(c, r):
        c.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, block(r.fields()) + representation))
        expect_connection_error(c, COMPRESSION_ERROR)
    case(case_id, title)(_)


def huffman_literal(bits):
    """A string literal marked Huffman-coded whose code is exactly `bits` (a multiple of 8 long)."""
    data = int(bits, 2).to_bytes(len(bits) // 8, "big")
    return integer(len(data), 7, 0x80) + data


def code(symbol):
    return format(REQUEST_CODES[symbol], "0%db" % REQUEST_CODES_LENGTH[symbol])


def bad_value(bits):
    """A literal field (new name, without indexing) whose value's Huffman code is `bits`."""
    return b"\x00" + string("x-test") + huffman_literal(bits)


compression_error("hpack/2.3.3/1", "Sends a indexed header field representation with invalid index", indexed(70))
compression_error("hpack/2.3.3/2", "Sends a literal header field representation with invalid index",
                  literal_indexed_name(70, "test", "incremental"))
compression_error("hpack/4.2/1", "Sends a dynamic table size update at the end of header block",
                  integer(2048, 5, 0x20))
# "a" is 5 bits (00011): padded with 11 ones, with 3 zeros, and followed by EOS (30 bits) and 5 ones.
compression_error("hpack/5.2/1", "Sends a Huffman-encoded string literal representation with padding longer than 7 bits",
                  bad_value(code(ord("a")) + "1" * 11))
compression_error("hpack/5.2/2", "Sends a Huffman-encoded string literal representation padded by zero",
                  bad_value(code(ord("a")) + "000"))
compression_error("hpack/5.2/3", "Sends a Huffman-encoded string literal representation containing the EOS symbol",
                  bad_value(code(ord("a")) + code(256) + "1" * 5))
compression_error("hpack/6.1/1", "Sends a indexed header field representation with index 0", indexed(0))


sends("hpack/6.3/1", "Sends a dynamic table size update larger than the value of SETTINGS_HEADER_TABLE_SIZE",
      lambda r: [frame(HEADERS, END_STREAM | END_HEADERS, 1, integer(4097, 5, 0x20) + block(r.fields()))], expect_connection_error, COMPRESSION_ERROR)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("only", nargs="*", help="run only the cases whose id starts with one of these")
    options = parser.parse_args()
    request = Request(options)
    cases = [("http2/3.5/2", "Sends invalid connection preface", None)] + CASES
    cases.sort(key=lambda item: [int(p) if p.isdigit() else p for p in item[0].replace(".", "/").split("/")])
    passed = failed = 0
    for case_id, title, function in cases:
        if options.only and not any(case_id.startswith(prefix) for prefix in options.only):
            continue
        try:
            if function is None:
                invalid_preface(options)
            else:
                c = Connection(options)
                try:
                    c.handshake()
                    function(c, request)
                finally:
                    c.close()
            passed += 1
            print(f"  ok    {case_id}  {title}")
        except (Failure, OSError) as error:
            failed += 1
            print(f"  FAIL  {case_id}  {title}: {error}")
    print(f"{passed + failed} cases: {passed} passed, {failed} failed "
          f"({'TLS' if options.tls else 'h2c'}, port {options.port})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
