// The few functions and types of libnghttp2 (the HTTP/2 library behind nghttpd and curl) that the provider
// API's codec uses, declared here from its public API (nghttp2/nghttp2.h, 1.x; the ABI of libnghttp2.so.14),
// so that building needs only the runtime library Debian's curl already depends on (libnghttp2-14), not
// libnghttp2-dev. See docs/provider-api.md, "The codec".
#ifndef PUSHGATE_CNGHTTP2_H
#define PUSHGATE_CNGHTTP2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
typedef struct nghttp2_option nghttp2_option;

typedef struct {
    uint8_t *name;
    uint8_t *value;
    size_t namelen;
    size_t valuelen;
    uint8_t flags;
} nghttp2_nv;

/// Every frame struct of nghttp2 starts with this header (`nghttp2_frame` is a union of them).
typedef struct {
    size_t length;
    int32_t stream_id;
    uint8_t type;
    uint8_t flags;
    uint8_t reserved;
} nghttp2_frame_hd;

typedef union nghttp2_frame nghttp2_frame;

typedef struct {
    int32_t settings_id;
    uint32_t value;
} nghttp2_settings_entry;

typedef union {
    int fd;
    void *ptr;
} nghttp2_data_source;

typedef ssize_t (*nghttp2_data_source_read_callback)(
    nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data);

typedef struct {
    nghttp2_data_source source;
    nghttp2_data_source_read_callback read_callback;
} nghttp2_data_provider;

typedef int (*nghttp2_on_begin_frame_callback)(nghttp2_session *session, const nghttp2_frame_hd *hd, void *user_data);
typedef int (*nghttp2_on_frame_send_callback)(nghttp2_session *session, const nghttp2_frame *frame, void *user_data);
typedef int (*nghttp2_on_begin_headers_callback)(nghttp2_session *session, const nghttp2_frame *frame, void *user_data);
typedef int (*nghttp2_on_header_callback)(
    nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen, const uint8_t *value,
    size_t valuelen, uint8_t flags, void *user_data);
typedef int (*nghttp2_on_frame_recv_callback)(nghttp2_session *session, const nghttp2_frame *frame, void *user_data);
typedef int (*nghttp2_on_data_chunk_recv_callback)(
    nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len, void *user_data);
typedef int (*nghttp2_on_stream_close_callback)(
    nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data);

int nghttp2_session_callbacks_new(nghttp2_session_callbacks **callbacks_ptr);
void nghttp2_session_callbacks_del(nghttp2_session_callbacks *callbacks);
void nghttp2_session_callbacks_set_on_begin_frame_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_begin_frame_callback on_begin_frame_callback);
void nghttp2_session_callbacks_set_on_frame_send_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_frame_send_callback on_frame_send_callback);
void nghttp2_session_callbacks_set_on_begin_headers_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_begin_headers_callback on_begin_headers_callback);
void nghttp2_session_callbacks_set_on_header_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_header_callback on_header_callback);
void nghttp2_session_callbacks_set_on_frame_recv_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_frame_recv_callback on_frame_recv_callback);
void nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_data_chunk_recv_callback on_data_chunk_recv_callback);
void nghttp2_session_callbacks_set_on_stream_close_callback(
    nghttp2_session_callbacks *cbs, nghttp2_on_stream_close_callback on_stream_close_callback);

int nghttp2_option_new(nghttp2_option **option_ptr);
void nghttp2_option_del(nghttp2_option *option);
void nghttp2_option_set_no_http_messaging(nghttp2_option *option, int val);
void nghttp2_option_set_no_closed_streams(nghttp2_option *option, int val);

typedef void *(*nghttp2_malloc)(size_t size, void *mem_user_data);
typedef void (*nghttp2_free)(void *ptr, void *mem_user_data);
typedef void *(*nghttp2_calloc)(size_t nmemb, size_t size, void *mem_user_data);
typedef void *(*nghttp2_realloc)(void *ptr, size_t size, void *mem_user_data);

/// The allocator a session uses for all its memory (the session copies the struct).
typedef struct {
    void *mem_user_data;
    nghttp2_malloc malloc;
    nghttp2_free free;
    nghttp2_calloc calloc;
    nghttp2_realloc realloc;
} nghttp2_mem;

int nghttp2_session_server_new3(
    nghttp2_session **session_ptr, const nghttp2_session_callbacks *callbacks, void *user_data,
    const nghttp2_option *option, nghttp2_mem *mem);
int nghttp2_session_client_new(
    nghttp2_session **session_ptr, const nghttp2_session_callbacks *callbacks, void *user_data);
void nghttp2_session_del(nghttp2_session *session);

ssize_t nghttp2_session_mem_recv(nghttp2_session *session, const uint8_t *in, size_t inlen);
ssize_t nghttp2_session_mem_send(nghttp2_session *session, const uint8_t **data_ptr);
int nghttp2_session_want_read(nghttp2_session *session);
int nghttp2_session_want_write(nghttp2_session *session);
/// The stream's object while it is open (NULL once closed: the session keeps no closed streams).
void *nghttp2_session_find_stream(nghttp2_session *session, int32_t stream_id);
/// A pointer kept with an open stream (NULL when none was set, or the stream is not open).
void *nghttp2_session_get_stream_user_data(nghttp2_session *session, int32_t stream_id);
/// 0, or NGHTTP2_ERR_INVALID_ARGUMENT when the stream is not open.
int nghttp2_session_set_stream_user_data(nghttp2_session *session, int32_t stream_id, void *stream_user_data);
/// Queues GOAWAY with `error_code` and ends the session once it is sent.
int nghttp2_session_terminate_session(nghttp2_session *session, uint32_t error_code);

int nghttp2_submit_settings(nghttp2_session *session, uint8_t flags, const nghttp2_settings_entry *iv, size_t niv);
int nghttp2_submit_response(
    nghttp2_session *session, int32_t stream_id, const nghttp2_nv *nva, size_t nvlen,
    const nghttp2_data_provider *data_prd);
int32_t nghttp2_submit_request(
    nghttp2_session *session, const void *pri_spec, const nghttp2_nv *nva, size_t nvlen,
    const nghttp2_data_provider *data_prd, void *stream_user_data);
int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code);
int nghttp2_submit_goaway(
    nghttp2_session *session, uint8_t flags, int32_t last_stream_id, uint32_t error_code, const uint8_t *opaque_data,
    size_t opaque_data_len);
int nghttp2_submit_window_update(
    nghttp2_session *session, uint8_t flags, int32_t stream_id, int32_t window_size_increment);

const char *nghttp2_strerror(int lib_error_code);

// Ours, not libnghttp2's: the session's allocator.
#include "SessionMemory.h"

#endif
