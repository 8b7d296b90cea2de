// A free-list allocator for one libnghttp2 session.
//
// A session allocates and frees several blocks a request (the stream, its header buffers, the answer's
// outbound item), and hundreds of requests are in flight on a busy connection: more blocks of each size
// than the C library's per-thread cache keeps, so most of them went through its slower bins. Here freed
// blocks are kept by size class (64-byte steps up to 1 KiB) for the next request, up to a byte limit, and
// given back when the connection is idle. One session uses one allocator, on its event loop only: no lock.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "SessionMemory.h"

enum {
    CLASS_BYTES = 64,
    CLASSES = 16,
    // A block starts with a header this long (the C library's alignment kept): a free block's link at its
    // start, the block's size class in its last byte.
    HEADER = 16,
    // The size class of a block larger than the largest class (allocated and freed by the C library).
    LARGE = 0xFF,
};

struct free_block {
    struct free_block *next;
};

struct pushgate_session_memory {
    struct free_block *free_lists[CLASSES];
    size_t cached;
    size_t limit;
};

static size_t class_size(unsigned size_class) { return (size_t)(size_class + 1) * CLASS_BYTES; }

static unsigned char *header_of(void *block) { return (unsigned char *)block - HEADER; }

static void *allocate(size_t size, void *user) {
    struct pushgate_session_memory *memory = user;
    if (size > (size_t)CLASSES * CLASS_BYTES) {
        if (size > SIZE_MAX - HEADER) return NULL;
        unsigned char *raw = malloc(HEADER + size);
        if (raw == NULL) return NULL;
        raw[HEADER - 1] = LARGE;
        return raw + HEADER;
    }
    unsigned size_class = size == 0 ? 0 : (unsigned)((size - 1) / CLASS_BYTES);
    struct free_block *reused = memory->free_lists[size_class];
    if (reused != NULL) {
        memory->free_lists[size_class] = reused->next;
        memory->cached -= class_size(size_class);
        return (unsigned char *)reused + HEADER;
    }
    unsigned char *raw = malloc(HEADER + class_size(size_class));
    if (raw == NULL) return NULL;
    raw[HEADER - 1] = (unsigned char)size_class;
    return raw + HEADER;
}

static void release(void *block, void *user) {
    if (block == NULL) return;
    struct pushgate_session_memory *memory = user;
    unsigned char *raw = header_of(block);
    unsigned size_class = raw[HEADER - 1];
    if (size_class == LARGE || memory->cached + class_size(size_class) > memory->limit) {
        free(raw);
        return;
    }
    struct free_block *kept = (struct free_block *)raw;
    kept->next = memory->free_lists[size_class];
    memory->free_lists[size_class] = kept;
    memory->cached += class_size(size_class);
}

static void *allocate_zeroed(size_t count, size_t size, void *user) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *block = allocate(count * size, user);
    if (block != NULL) memset(block, 0, count * size);
    return block;
}

static void *reallocate(void *block, size_t size, void *user) {
    if (block == NULL) return allocate(size, user);
    unsigned char *raw = header_of(block);
    unsigned size_class = raw[HEADER - 1];
    if (size_class == LARGE) {
        // A large block stays one (its class byte moves with it).
        if (size > SIZE_MAX - HEADER) return NULL;
        unsigned char *moved = realloc(raw, HEADER + size);
        return moved == NULL ? NULL : moved + HEADER;
    }
    if (size <= class_size(size_class)) return block;
    void *grown = allocate(size, user);
    if (grown == NULL) return NULL;
    memcpy(grown, block, class_size(size_class));
    release(block, user);
    return grown;
}

pushgate_session_memory *pushgate_session_memory_new(size_t cache_limit) {
    struct pushgate_session_memory *memory = calloc(1, sizeof *memory);
    if (memory != NULL) memory->limit = cache_limit;
    return memory;
}

void pushgate_session_memory_trim(pushgate_session_memory *memory) {
    for (unsigned size_class = 0; size_class < CLASSES; size_class++) {
        struct free_block *block = memory->free_lists[size_class];
        while (block != NULL) {
            struct free_block *next = block->next;
            free(block);
            block = next;
        }
        memory->free_lists[size_class] = NULL;
    }
    memory->cached = 0;
}

void pushgate_session_memory_del(pushgate_session_memory *memory) {
    if (memory == NULL) return;
    pushgate_session_memory_trim(memory);
    free(memory);
}

nghttp2_mem pushgate_session_memory_nghttp2(pushgate_session_memory *memory) {
    nghttp2_mem mem = {memory, allocate, release, allocate_zeroed, reallocate};
    return mem;
}

size_t pushgate_session_memory_cached(const pushgate_session_memory *memory) { return memory->cached; }
