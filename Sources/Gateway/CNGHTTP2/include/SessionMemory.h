// A free-list allocator for one libnghttp2 session (nghttp2_session_server_new3's nghttp2_mem): see
// SessionMemory.c.
#ifndef PUSHGATE_SESSION_MEMORY_H
#define PUSHGATE_SESSION_MEMORY_H

#include "CNGHTTP2.h"

typedef struct pushgate_session_memory pushgate_session_memory;

/// A new allocator that keeps at most `cache_limit` bytes of freed blocks for reuse; NULL when out of memory.
pushgate_session_memory *pushgate_session_memory_new(size_t cache_limit);
/// Frees the allocator and the blocks it keeps (after the session that used it is deleted).
void pushgate_session_memory_del(pushgate_session_memory *memory);
/// The allocator as libnghttp2 takes it (the session copies the struct).
nghttp2_mem pushgate_session_memory_nghttp2(pushgate_session_memory *memory);
/// Gives the blocks kept for reuse back to the C library (an idle connection keeps none).
void pushgate_session_memory_trim(pushgate_session_memory *memory);
/// The bytes of freed blocks kept for reuse.
size_t pushgate_session_memory_cached(const pushgate_session_memory *memory);

#endif
