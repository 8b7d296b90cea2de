// The few functions and types of libnghttp2 (the HTTP/2 library behind nghttpd and curl) that the provider
// API's codec uses, declared here from its public API (nghttp2/nghttp2.h, 1.x; the ABI of libnghttp2.so.14),
// so that building needs only the runtime library Debian's curl already depends on (libnghttp2-14), not
// libnghttp2-dev. See docs/provider-api.md, "The codec".
#ifndef PUSHGATE_CNGHTTP2_H
#define PUSHGATE_CNGHTTP2_H

// The types, as libnghttp2 lays them out (CNGHTTP2Types.h); .ci/nghttp2-layout.c checks them and every
// declaration below against the real header.
#ifndef PUSHGATE_CNGHTTP2_CHECKING
#include "CNGHTTP2Types.h"
#endif

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
nghttp2_stream *nghttp2_session_find_stream(nghttp2_session *session, int32_t stream_id);
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
    nghttp2_session *session, const nghttp2_priority_spec *pri_spec, const nghttp2_nv *nva, size_t nvlen,
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
