// libnghttp2's types that the codec uses, laid out as in nghttp2/nghttp2.h (1.x; the ABI of
// libnghttp2.so.14). Each name goes through PUSHGATE_NGHTTP2(name): itself here, and a name of its own in
// .ci/nghttp2-layout.c, which includes this file beside the real header and checks every size and offset.
#ifndef PUSHGATE_NGHTTP2
#define PUSHGATE_NGHTTP2(name) name
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
typedef struct nghttp2_option nghttp2_option;
typedef struct nghttp2_stream nghttp2_stream;
/// Opaque here: the codec gives no priority (NULL).
typedef struct nghttp2_priority_spec PUSHGATE_NGHTTP2(nghttp2_priority_spec);

typedef struct {
    uint8_t *name;
    uint8_t *value;
    size_t namelen;
    size_t valuelen;
    uint8_t flags;
} PUSHGATE_NGHTTP2(nghttp2_nv);

/// Every frame struct of nghttp2 starts with this header (`nghttp2_frame` is a union of them).
typedef struct {
    size_t length;
    int32_t stream_id;
    uint8_t type;
    uint8_t flags;
    uint8_t reserved;
} PUSHGATE_NGHTTP2(nghttp2_frame_hd);

/// Opaque here: the codec reads a frame only through its header, which every member begins with.
typedef union nghttp2_frame PUSHGATE_NGHTTP2(nghttp2_frame);

typedef struct {
    int32_t settings_id;
    uint32_t value;
} PUSHGATE_NGHTTP2(nghttp2_settings_entry);

typedef union {
    int fd;
    void *ptr;
} PUSHGATE_NGHTTP2(nghttp2_data_source);

typedef ssize_t (*PUSHGATE_NGHTTP2(nghttp2_data_source_read_callback))(
    nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
    PUSHGATE_NGHTTP2(nghttp2_data_source) *source, void *user_data);

typedef struct {
    PUSHGATE_NGHTTP2(nghttp2_data_source) source;
    PUSHGATE_NGHTTP2(nghttp2_data_source_read_callback) read_callback;
} PUSHGATE_NGHTTP2(nghttp2_data_provider);

typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_begin_frame_callback))(nghttp2_session *session, const PUSHGATE_NGHTTP2(nghttp2_frame_hd) *hd, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_frame_send_callback))(nghttp2_session *session, const PUSHGATE_NGHTTP2(nghttp2_frame) *frame, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_begin_headers_callback))(nghttp2_session *session, const PUSHGATE_NGHTTP2(nghttp2_frame) *frame, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_header_callback))(
    nghttp2_session *session, const PUSHGATE_NGHTTP2(nghttp2_frame) *frame, const uint8_t *name, size_t namelen, const uint8_t *value,
    size_t valuelen, uint8_t flags, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_frame_recv_callback))(nghttp2_session *session, const PUSHGATE_NGHTTP2(nghttp2_frame) *frame, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_data_chunk_recv_callback))(
    nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len, void *user_data);
typedef int (*PUSHGATE_NGHTTP2(nghttp2_on_stream_close_callback))(
    nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data);

typedef void *(*PUSHGATE_NGHTTP2(nghttp2_malloc))(size_t size, void *mem_user_data);
typedef void (*PUSHGATE_NGHTTP2(nghttp2_free))(void *ptr, void *mem_user_data);
typedef void *(*PUSHGATE_NGHTTP2(nghttp2_calloc))(size_t nmemb, size_t size, void *mem_user_data);
typedef void *(*PUSHGATE_NGHTTP2(nghttp2_realloc))(void *ptr, size_t size, void *mem_user_data);

/// The allocator a session uses for all its memory (the session copies the struct).
typedef struct {
    void *mem_user_data;
    PUSHGATE_NGHTTP2(nghttp2_malloc) malloc;
    PUSHGATE_NGHTTP2(nghttp2_free) free;
    PUSHGATE_NGHTTP2(nghttp2_calloc) calloc;
    PUSHGATE_NGHTTP2(nghttp2_realloc) realloc;
} PUSHGATE_NGHTTP2(nghttp2_mem);

