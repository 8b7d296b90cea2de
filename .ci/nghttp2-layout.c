// The provider API's codec declares the few parts of libnghttp2 it uses by hand
// (Sources/Gateway/CNGHTTP2/include), so that building needs only the runtime library. This file checks
// those declarations against the real header (libnghttp2-dev): every function's prototype (a mismatch is
// a "conflicting types" error) and every type's size and each field's offset and size (_Static_assert).
// It compiles or it fails; nothing runs.
//
//   cc -std=c11 -fsyntax-only -I Sources/Gateway/CNGHTTP2/include .ci/nghttp2-layout.c   (.ci/run does)
#include <nghttp2/nghttp2.h>
#include <stddef.h>

// Our types under names of their own, beside the real ones.
#define PUSHGATE_NGHTTP2(name) ours_##name
#include "CNGHTTP2Types.h"
#undef PUSHGATE_NGHTTP2

// Our function declarations against the real types: each must match the real prototype.
#define PUSHGATE_CNGHTTP2_CHECKING 1
#include "CNGHTTP2.h"

#define SIZE(type) _Static_assert(sizeof(ours_##type) == sizeof(type), #type ": size")
#define FIELD(type, field)                                                                                        \
    _Static_assert(offsetof(ours_##type, field) == offsetof(type, field), #type "." #field ": offset");         \
    _Static_assert(sizeof(((ours_##type *)0)->field) == sizeof(((type *)0)->field), #type "." #field ": size")
#define SAME_TYPE(a, b) _Static_assert(__builtin_types_compatible_p(a, b), #a " is not " #b)

SIZE(nghttp2_nv);
FIELD(nghttp2_nv, name);
FIELD(nghttp2_nv, value);
FIELD(nghttp2_nv, namelen);
FIELD(nghttp2_nv, valuelen);
FIELD(nghttp2_nv, flags);

SIZE(nghttp2_frame_hd);
FIELD(nghttp2_frame_hd, length);
FIELD(nghttp2_frame_hd, stream_id);
FIELD(nghttp2_frame_hd, type);
FIELD(nghttp2_frame_hd, flags);
FIELD(nghttp2_frame_hd, reserved);
// Every frame begins with its header, which is all the codec reads of one.
_Static_assert(offsetof(nghttp2_frame, hd) == 0, "nghttp2_frame.hd: offset");
SAME_TYPE(__typeof__(((nghttp2_frame *)0)->hd), nghttp2_frame_hd);

SIZE(nghttp2_settings_entry);
FIELD(nghttp2_settings_entry, settings_id);
FIELD(nghttp2_settings_entry, value);

SIZE(nghttp2_data_source);
FIELD(nghttp2_data_source, fd);
FIELD(nghttp2_data_source, ptr);

SIZE(nghttp2_data_provider);
FIELD(nghttp2_data_provider, source);
FIELD(nghttp2_data_provider, read_callback);

SIZE(nghttp2_mem);
FIELD(nghttp2_mem, mem_user_data);
FIELD(nghttp2_mem, malloc);
FIELD(nghttp2_mem, free);
FIELD(nghttp2_mem, calloc);
FIELD(nghttp2_mem, realloc);

// The callbacks' types: ours (with our structs) and the real ones (with theirs) each match the signature,
// written once with the struct names' prefix as its parameter.
#define SAME_CALLBACK(name, signature)                                                                           \
    _Static_assert(__builtin_types_compatible_p(ours_##name, signature(ours_)), "ours: " #name);               \
    _Static_assert(__builtin_types_compatible_p(name, signature()), "libnghttp2's: " #name)
#define READ(P) ssize_t (*)(nghttp2_session *, int32_t, uint8_t *, size_t, uint32_t *, P##nghttp2_data_source *, void *)
#define BEGIN_FRAME(P) int (*)(nghttp2_session *, const P##nghttp2_frame_hd *, void *)
#define FRAME(P) int (*)(nghttp2_session *, const P##nghttp2_frame *, void *)
#define HEADER(P)                                                                                                \
    int (*)(nghttp2_session *, const P##nghttp2_frame *, const uint8_t *, size_t, const uint8_t *, size_t, uint8_t, \
        void *)
#define DATA_CHUNK(P) int (*)(nghttp2_session *, uint8_t, int32_t, const uint8_t *, size_t, void *)
#define STREAM_CLOSE(P) int (*)(nghttp2_session *, int32_t, uint32_t, void *)
#define MALLOC(P) void *(*)(size_t, void *)
#define FREE(P) void (*)(void *, void *)
#define CALLOC(P) void *(*)(size_t, size_t, void *)
#define REALLOC(P) void *(*)(void *, size_t, void *)
SAME_CALLBACK(nghttp2_data_source_read_callback, READ);
SAME_CALLBACK(nghttp2_on_begin_frame_callback, BEGIN_FRAME);
SAME_CALLBACK(nghttp2_on_frame_send_callback, FRAME);
SAME_CALLBACK(nghttp2_on_begin_headers_callback, FRAME);
SAME_CALLBACK(nghttp2_on_header_callback, HEADER);
SAME_CALLBACK(nghttp2_on_frame_recv_callback, FRAME);
SAME_CALLBACK(nghttp2_on_data_chunk_recv_callback, DATA_CHUNK);
SAME_CALLBACK(nghttp2_on_stream_close_callback, STREAM_CLOSE);
SAME_CALLBACK(nghttp2_malloc, MALLOC);
SAME_CALLBACK(nghttp2_free, FREE);
SAME_CALLBACK(nghttp2_calloc, CALLOC);
SAME_CALLBACK(nghttp2_realloc, REALLOC);
