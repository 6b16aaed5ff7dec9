// SPDX-License-Identifier: GPL-2.0
/* The eBPF observer's kernel side: which processes belong to a call, and what they opened,
 * executed, listed and named, as the kernel saw it.
 *
 * Raw tracepoints only: fentry is refused on kernels in lockdown's integrity mode, and a raw
 * tracepoint needs no kernel BTF at attach time. Every field is read through CO-RE relocations.
 *
 * An open is reported by the file the kernel installed at the returned descriptor, never by the
 * path string the process passed: a thread that rewrites the string while the call runs cannot
 * disguise what was opened. */
// The kernel's types come first: the libbpf headers are written against them.
#include "vmlinux.h"
// (a block of its own, so that the includes below are never sorted before it)

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ebpf_event.h"

char LICENSE[] SEC("license") = "GPL";

#define AT_FDCWD -100
#define TS_COMPAT 0x0002
#define X32_SYSCALL_BIT 0x40000000
#define MNT_INTERNAL 0x4000
#define WALK_STEPS 512

/* Wake the reader only once this many bytes wait: a wake-up per event cost more than the event.
 * The plugin also drains at each call's end. Set before load. */
const volatile __u64 wake_at_bytes = 1 << 20;

/* Processes of an audited call: tgid -> the call's id. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, __u32);
} tracked SEC(".maps");

/* Tokens handed to enter programs that have not claimed their call yet: token -> call id. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u64);
    __type(value, __u32);
} pending SEC(".maps");

/* Each audited call's counters. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, struct tea_ebpf_call_counts);
} calls SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 24);
} events SEC(".maps");

/* An event is built here, then copied out at its own length. */
/* Room for the runs of fields a path walk reads (below), kept out of the stack: the programs'
 * deepest call chain needs the room. */
#define WALK_RUN_ROOM 72
struct scratch {
    struct tea_ebpf_event e;
    char data[3 * TEA_EBPF_REGION];
    __u64 walk_run[WALK_RUN_ROOM / 8];
};
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch);
} scratch_space SEC(".maps");

/* A descriptor table that several tasks share (threads, or processes cloned with CLONE_FILES)
 * can change under an open between the moment the kernel installs its file and the moment
 * sys_exit reads it: another task closes or replaces the number (close, dup2, dup3,
 * close_range) and may put a decoy on it. The calls that can do so are followed from their
 * sys_enter to their sys_exit, per table:
 *  - one that saw a file at its number when it entered, while an open of the table was running,
 *    reports that file (TEA_EBPF_FLAG_DISPLACED): if it is the open's, it is listed;
 *  - one that saw none (the open installed its file after it entered), a close_range, and two at
 *    once on the same number are blind: what they took away is not known. An open that one of
 *    them overlapped on its number, or that one of them that succeeded ran during, is reported
 *    unverified (TEA_EBPF_FLAG_UNVERIFIED).
 * Each side publishes itself with an atomic operation before it reads the other's state, so
 * that of two that overlap, at least one sees the other. */
#define DISPLACER_SLOTS 8
#define EBADF_RET 9
/* Records in open_flights and displacer_flights: while there are none, a return on the machine
 * looks nothing up. */
__u64 open_records = 0;
__u64 displacer_records = 0;
#define SLOT_USED (1ULL << 32)
#define SLOT_BLIND (1ULL << 33)
#define SLOT_CONTENDED (1ULL << 34)

struct table_state {
    __u64 blind_gen; /* blind calls that succeeded */
    __u32 opens;     /* opens running */
    __u32 unslotted; /* blind calls running without a slot (close_range, or no slot free) */
    __u64 slot[DISPLACER_SLOTS]; /* running calls: SLOT_USED | flags | their number */
};

/* Shared descriptor tables of tracked processes: the table's address -> its state. A table is
 * forgotten when its last task ends. These three maps are allocated as they fill, and sized for
 * what runs at once (a full one makes the call incomplete): their creation is part of every
 * session's load. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u64);
    __type(value, struct table_state);
} tables SEC(".maps");

/* Opens running in a shared table: thread id -> the table and its blind_gen at the open's
 * entry. */
struct open_flight {
    __u64 table;
    __u64 gen;
};
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct open_flight);
} open_flights SEC(".maps");

/* Closes and replacements running in a shared table: thread id -> the table and the slot. */
struct displacer_flight {
    __u64 table;
    __s32 slot; /* -1: counted in unslotted */
    __u32 pad;
};
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u32);
    __type(value, struct displacer_flight);
} displacer_flights SEC(".maps");

/* Runs of fields read at once. The programs read several fields of each structure on every open,
 * and a helper call per field was most of their time: a run of fields is read with one
 * bpf_probe_read_kernel into a buffer on the stack, then each field is taken from there. A run
 * spans the fields its reader needs, wherever the running kernel puts them (the offsets are
 * relocated at load, so the verifier sees them as constants), from the 8-byte boundary at or
 * before the first, so that each field keeps its alignment (the verifier checks every stack access
 * for it). A reader whose fields lie further apart than its buffer reads them one by one. */
#define field_off(type, f) ((__u32)bpf_core_field_offset(type, f))
#define field_end(type, f) ((__u32)(bpf_core_field_offset(type, f) + bpf_core_field_size(type, f)))
#define min_u32(a, b) ((a) < (b) ? (a) : (b))
#define max_u32(a, b) ((a) > (b) ? (a) : (b))
#define run_first(start) ((start) & ~7U)

/* Whether the run [start, end) (start taken down to its 8-byte boundary) fits `max` bytes: a
 * constant once the offsets are relocated, so the verifier follows one branch. */
#define run_fits(max, start, end) ((end) > run_first(start) && (end)-run_first(start) <= (max))
/* Reads the run [start, end) of `src` into `buf`. What cannot be read reads as zeros, as a field
 * read alone would. */
static __always_inline void read_run(void *buf, const void *src, __u32 start, __u32 end) {
    const __u32 first = run_first(start);
    bpf_probe_read_kernel(buf, end - first, (const char *)src + first);
}
/* A field of a run read from `start`: its address in the buffer, and its value. */
#define run_addr(buf, start, type, f) \
    ((const char *)(buf) + (field_off(type, f) - run_first(start)))
#define run_field(buf, start, type, f, ctype) (*(ctype const *)run_addr(buf, start, type, f))

/* Bytes of a dentry's inline name (DNAME_INLINE_LEN), which holds a name shorter than that. */
#define INLINE_NAME 40
#define DENTRY_RUN 72
#define MOUNT_RUN 40
_Static_assert(DENTRY_RUN <= WALK_RUN_ROOM && MOUNT_RUN <= WALK_RUN_ROOM,
               "a walk's runs are read into the scratch's walk_run");
#define PATH_RUN 16

struct walk {
    struct dentry *d;
    struct mount *mnt;
    /* mnt's fields, read once when the walk enters it */
    struct mount *mnt_parent;
    struct dentry *mnt_mountpoint;
    struct dentry *mnt_root;
    int mnt_flags;
    struct dentry *root_d;
    struct vfsmount *root_mnt;
    char *names;
    __u64 *run; /* the scratch's walk_run */
    __u32 off;
    __u8 status;
};

/* The walk's next mount: its parent, where it is mounted, its root and its flags. */
static __always_inline void enter_mount(struct walk *w, struct mount *mnt) {
    const __u32 start = min_u32(
        min_u32(field_off(struct mount, mnt_parent), field_off(struct mount, mnt_mountpoint)),
        min_u32(field_off(struct mount, mnt.mnt_root), field_off(struct mount, mnt.mnt_flags)));
    const __u32 end = max_u32(
        max_u32(field_end(struct mount, mnt_parent), field_end(struct mount, mnt_mountpoint)),
        max_u32(field_end(struct mount, mnt.mnt_root), field_end(struct mount, mnt.mnt_flags)));
    __u64 *run = w->run;
    w->mnt = mnt;
    if (run_fits(MOUNT_RUN, start, end)) {
        read_run(run, mnt, start, end);
        w->mnt_parent = run_field(run, start, struct mount, mnt_parent, struct mount *);
        w->mnt_mountpoint = run_field(run, start, struct mount, mnt_mountpoint, struct dentry *);
        w->mnt_root = run_field(run, start, struct mount, mnt.mnt_root, struct dentry *);
        w->mnt_flags = run_field(run, start, struct mount, mnt.mnt_flags, int);
    } else {
        w->mnt_parent = BPF_CORE_READ(mnt, mnt_parent);
        w->mnt_mountpoint = BPF_CORE_READ(mnt, mnt_mountpoint);
        w->mnt_root = BPF_CORE_READ(mnt, mnt.mnt_root);
        w->mnt_flags = BPF_CORE_READ(mnt, mnt.mnt_flags);
    }
}

/* Whether the first `len` bytes (under INLINE_NAME) of `words` hold a NUL: each word's bytes past
 * the name are set, then any byte left zero shows in the usual borrow test. */
static __always_inline int has_nul(const __u64 *words, __u32 len) {
    __u64 zero_bytes = 0;
    for (__u32 i = 0; i < INLINE_NAME / 8; i++) {
        const __s32 in_name = (__s32)len - (__s32)(8 * i);
        __u64 w = words[i];
        if (in_name <= 0)
            w = ~0ULL;
        else if (in_name < 8)
            w |= ~((1ULL << (8 * in_name)) - 1);
        zero_bytes |= (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
    }
    return zero_bytes != 0;
}

/* One step up: a name, or a mount crossed. Stops at the process's root, as d_path does. */
static long walk_step(__u32 index, void *ctx) {
    struct walk *w = ctx;
    struct dentry *d = w->d;
    if (d == w->root_d && &w->mnt->mnt == w->root_mnt) {
        w->status = TEA_EBPF_WALK_ROOT;
        return 1;
    }
    if (d == w->mnt_root) {
        if (w->mnt_parent == w->mnt) {
            w->status =
                (w->mnt_flags & MNT_INTERNAL) ? TEA_EBPF_WALK_PSEUDO : TEA_EBPF_WALK_OUTSIDE;
            return 1;
        }
        w->d = w->mnt_mountpoint;
        enter_mount(w, w->mnt_parent);
        return 0;
    }
    /* The dentry's parent and name; on a kernel that keeps short names in the dentry
     * (d_shortname), a short name comes with the same read. */
    const int has_inline = bpf_core_field_exists(struct dentry, d_shortname) &&
                           bpf_core_field_size(struct dentry, d_shortname) == INLINE_NAME;
    __u32 start = min_u32(field_off(struct dentry, d_parent), field_off(struct dentry, d_name));
    __u32 end = max_u32(field_end(struct dentry, d_parent), field_end(struct dentry, d_name));
    if (has_inline) {
        start = min_u32(start, field_off(struct dentry, d_shortname));
        end = max_u32(end, field_end(struct dentry, d_shortname));
    }
    __u64 *run = w->run;
    struct dentry *parent = 0;
    const unsigned char *name = 0;
    const __u64 *inline_words = 0;
    __u32 len = 0;
    if (run_fits(DENTRY_RUN, start, end)) {
        read_run(run, d, start, end);
        parent = run_field(run, start, struct dentry, d_parent, struct dentry *);
        name = run_field(run, start, struct dentry, d_name.name, const unsigned char *);
        len = run_field(run, start, struct dentry, d_name.len, __u32);
        if (has_inline && name == (const unsigned char *)d + field_off(struct dentry, d_shortname))
            inline_words = (const __u64 *)run_addr(run, start, struct dentry, d_shortname);
    } else {
        parent = BPF_CORE_READ(d, d_parent);
        name = BPF_CORE_READ(d, d_name.name);
    }
    if (parent == d) {
        /* A dentry cut off from its tree (a disconnected or internal one). */
        w->status = (w->mnt_flags & MNT_INTERNAL) ? TEA_EBPF_WALK_PSEUDO : TEA_EBPF_WALK_OUTSIDE;
        return 1;
    }
    __u32 off = w->off;
    if (off >= TEA_EBPF_NAMES) {
        w->status = TEA_EBPF_WALK_TOO_LONG;
        return 1;
    }
    char *out = w->names + (off & (TEA_EBPF_NAMES - 1));
    long n = 0;
    if (inline_words && len < INLINE_NAME && !has_nul(inline_words, len)) {
        /* The name came with the dentry: copied, not read again. One with a NUL inside (a rename
         * while it was read) is read as a string instead, cut at the NUL as before. */
        for (__u32 i = 0; i < INLINE_NAME / 8; i++) ((__u64 *)out)[i] = inline_words[i];
        /* The bound again where the verifier sees it: the compiler would drop a mask it knows
         * changes nothing. */
        __u64 end_at = len;
        asm volatile("" : "+r"(end_at));
        out[end_at & 63] = 0;
        n = (long)len + 1;
    } else {
        n = bpf_probe_read_kernel_str(out, TEA_EBPF_NAME_MAX, name);
    }
    if (n <= 0) {
        w->status = TEA_EBPF_WALK_NO_FILE;
        return 1;
    }
    w->off = off + (__u32)n;
    w->d = parent;
    return 0;
}

/* The region of the scratch a walk writes its names into. */
struct names_room {
    char bytes[TEA_EBPF_REGION];
};

/* Walks the path (`d` on `vm`) up to the root of the process `task_addr` into `names`; returns
 * the bytes written, and the walk's status in bits 32 and up. Global, so that the verifier checks
 * the walk once, not at each of the places that report a path; kernel pointers travel as
 * numbers. */
__noinline __u64 walk_names(__u64 task_addr, __u64 d_addr, __u64 vm_addr,
                            struct names_room *names) {
    struct task_struct *task = (struct task_struct *)task_addr;
    struct dentry *d = (struct dentry *)d_addr;
    struct vfsmount *vm = (struct vfsmount *)vm_addr;
    __u32 zero = 0;
    struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
    if (!s || !names || !d || !vm) return (__u64)TEA_EBPF_WALK_NO_FILE << 32;
    const __u32 start =
        min_u32(field_off(struct fs_struct, root.mnt), field_off(struct fs_struct, root.dentry));
    const __u32 end =
        max_u32(field_end(struct fs_struct, root.mnt), field_end(struct fs_struct, root.dentry));
    struct walk w = {
        .d = d,
        .names = names->bytes,
        .run = s->walk_run,
        .off = 0,
        .status = TEA_EBPF_WALK_NONE,
    };
    struct fs_struct *fs = BPF_CORE_READ(task, fs);
    __u64 run[PATH_RUN / 8];
    if (run_fits(PATH_RUN, start, end)) {
        read_run(run, fs, start, end);
        w.root_d = run_field(run, start, struct fs_struct, root.dentry, struct dentry *);
        w.root_mnt = run_field(run, start, struct fs_struct, root.mnt, struct vfsmount *);
    } else {
        w.root_d = BPF_CORE_READ(task, fs, root.dentry);
        w.root_mnt = BPF_CORE_READ(task, fs, root.mnt);
    }
    enter_mount(&w, container_of(vm, struct mount, mnt));
    bpf_loop(WALK_STEPS, walk_step, &w, 0);
    __u64 status = w.status == TEA_EBPF_WALK_NONE ? TEA_EBPF_WALK_TOO_LONG : w.status;
    /* A last name cut at the buffer's end is not the path: never reported as a whole one. */
    if (w.off > TEA_EBPF_NAMES) status = TEA_EBPF_WALK_TOO_LONG;
    return (status << 32) | (w.off > TEA_EBPF_NAMES ? TEA_EBPF_NAMES : w.off);
}

/* Walks `path` up to the current process's root into `names`, a region of the scratch; returns
 * the bytes written. */
static __always_inline __u32 walk_path(struct task_struct *task, struct dentry *d,
                                       struct vfsmount *vm, char *names, __u8 *status) {
    const __u64 walked = walk_names((__u64)task, (__u64)d, (__u64)vm, (struct names_room *)names);
    *status = (__u8)(walked >> 32);
    return (__u32)walked;
}

#define FILES_RUN 40
#define FDT_RUN 16
#define FILE_RUN 80

/* The file at `fd` in the task's descriptor table (0: none), and in `users` how many tasks hold
 * that table. */
static __always_inline struct file *file_in_table(struct task_struct *task, long fd, int *users) {
    const __u32 files_start =
        min_u32(field_off(struct files_struct, count), field_off(struct files_struct, fdt));
    const __u32 files_end =
        max_u32(field_end(struct files_struct, count), field_end(struct files_struct, fdt));
    const __u32 fdt_start =
        min_u32(field_off(struct fdtable, max_fds), field_off(struct fdtable, fd));
    const __u32 fdt_end =
        max_u32(field_end(struct fdtable, max_fds), field_end(struct fdtable, fd));
    *users = 0;
    struct files_struct *files = BPF_CORE_READ(task, files);
    if (!files) return 0;
    struct fdtable *fdt = 0;
    __u64 run[max_u32(FILES_RUN, FDT_RUN) / 8];
    if (run_fits(FILES_RUN, files_start, files_end)) {
        read_run(run, files, files_start, files_end);
        *users = run_field(run, files_start, struct files_struct, count.counter, int);
        fdt = run_field(run, files_start, struct files_struct, fdt, struct fdtable *);
    } else {
        *users = BPF_CORE_READ(files, count.counter);
        fdt = BPF_CORE_READ(files, fdt);
    }
    if (fd < 0 || !fdt) return 0;
    unsigned int max = 0;
    struct file **fds = 0;
    if (run_fits(FDT_RUN, fdt_start, fdt_end)) {
        read_run(run, fdt, fdt_start, fdt_end);
        max = run_field(run, fdt_start, struct fdtable, max_fds, unsigned int);
        fds = run_field(run, fdt_start, struct fdtable, fd, struct file **);
    } else {
        max = BPF_CORE_READ(fdt, max_fds);
        fds = BPF_CORE_READ(fdt, fd);
    }
    if ((unsigned long)fd >= max) return 0;
    struct file *f = 0;
    bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
    return f;
}

static __always_inline struct file *file_at(struct task_struct *task, long fd) {
    int users = 0;
    return file_in_table(task, fd, &users);
}

/* What a report needs of a file: its flags, its mode and its path. */
struct file_fields {
    __u32 flags;
    __u32 mode;
    struct dentry *dentry;
    struct vfsmount *mnt;
};
static __always_inline void read_file(struct file *f, struct file_fields *out) {
    const __u32 start =
        min_u32(min_u32(field_off(struct file, f_mode), field_off(struct file, f_flags)),
                field_off(struct file, f_path));
    const __u32 end =
        max_u32(max_u32(field_end(struct file, f_mode), field_end(struct file, f_flags)),
                field_end(struct file, f_path));
    __u64 run[FILE_RUN / 8];
    if (run_fits(FILE_RUN, start, end)) {
        read_run(run, f, start, end);
        out->flags = run_field(run, start, struct file, f_flags, __u32);
        out->mode = run_field(run, start, struct file, f_mode, __u32);
        out->dentry = run_field(run, start, struct file, f_path.dentry, struct dentry *);
        out->mnt = run_field(run, start, struct file, f_path.mnt, struct vfsmount *);
    } else {
        out->flags = BPF_CORE_READ(f, f_flags);
        out->mode = BPF_CORE_READ(f, f_mode);
        out->dentry = BPF_CORE_READ(f, f_path.dentry);
        out->mnt = BPF_CORE_READ(f, f_path.mnt);
    }
}

static __always_inline struct scratch *scratch_for(__u32 call_id, __u32 tgid, __u16 kind) {
    __u32 zero = 0;
    struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
    if (!s) return 0;
    __builtin_memset(&s->e, 0, sizeof(s->e));
    s->e.call_id = call_id;
    s->e.tgid = tgid;
    s->e.kind = kind;
    return s;
}

static __always_inline void count_lost(__u32 call_id) {
    struct tea_ebpf_call_counts *c = bpf_map_lookup_elem(&calls, &call_id);
    if (c) __sync_fetch_and_add(&c->lost, 1);
}

/* A region's length, bounded where the verifier sees it: the barrier keeps the compiler from
 * passing a copy made before the bound. */
static __always_inline __u64 region_len(__u64 n) {
    asm volatile("" : "+r"(n));
    if (n > TEA_EBPF_REGION) n = TEA_EBPF_REGION;
    asm volatile("" : "+r"(n));
    return n;
}

/* Sends the event in this CPU's scratch: the header, then each of its first `regions` regions cut
 * to its bytes, one after another (the ring holds what was written, not the scratch's room: a
 * region is up to 4 KiB, a typical path some tens of bytes). */
__noinline int send_scratch(__u32 regions) {
    __u32 zero = 0;
    struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
    if (!s) return 0;
    if (regions < 3) s->e.bytes[2] = 0;
    if (regions < 2) s->e.bytes[1] = 0;
    if (regions < 1) s->e.bytes[0] = 0;
    __u64 len0 = region_len(s->e.bytes[0]);
    __u64 len1 = region_len(s->e.bytes[1]);
    __u64 len2 = region_len(s->e.bytes[2]);
    s->e.bytes[0] = (__u16)len0;
    s->e.bytes[1] = (__u16)len1;
    s->e.bytes[2] = (__u16)len2;
    __u32 size = (__u32)(sizeof(s->e) + len0 + len1 + len2);
    s->e.size = size;
    __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    __u64 flags = avail >= wake_at_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
    struct bpf_dynptr out;
    if (bpf_ringbuf_reserve_dynptr(&events, size, 0, &out) != 0) {
        bpf_ringbuf_discard_dynptr(&out, 0);
        count_lost(s->e.call_id);
        return 0;
    }
    long failed = bpf_dynptr_write(&out, 0, &s->e, sizeof(s->e), 0);
    failed |= bpf_dynptr_write(&out, sizeof(s->e), s->data, region_len(len0), 0);
    failed |=
        bpf_dynptr_write(&out, sizeof(s->e) + len0, s->data + TEA_EBPF_REGION, region_len(len1), 0);
    failed |= bpf_dynptr_write(&out, sizeof(s->e) + len0 + len1, s->data + 2 * TEA_EBPF_REGION,
                               region_len(len2), 0);
    if (failed != 0) {
        bpf_ringbuf_discard_dynptr(&out, 0);
        count_lost(s->e.call_id);
        return 0;
    }
    bpf_ringbuf_submit_dynptr(&out, flags);
    return 0;
}

/* The event built in this CPU's scratch, `s`, sent (by the one copy of the sending code the
 * verifier checks once). */
static __always_inline void send(struct scratch *s, __u32 regions) {
    (void)s;
    send_scratch(regions);
}

#define AT_NULL 0
#define AT_BASE 7
#define AUXV_PAIRS 32

/* Where the kernel mapped the program loader of the exec that just happened (the auxiliary
 * vector's AT_BASE, which the ELF loader set up): 0 for a program that names none. */
static __always_inline __u64 loader_base(struct task_struct *task) {
    struct mm_struct *mm = BPF_CORE_READ(task, mm);
    if (!mm) return 0;
    unsigned long *auxv = mm->saved_auxv;
    for (__u32 i = 0; i < AUXV_PAIRS; i++) {
        unsigned long pair[2] = {0, 0};
        if (bpf_probe_read_kernel(pair, sizeof(pair), auxv + 2 * i) != 0) return 0;
        if (pair[0] == AT_NULL) return 0;
        if (pair[0] == AT_BASE) return pair[1];
    }
    return 0;
}

struct loader_file {
    struct dentry *d;
    struct vfsmount *mnt;
};

static long loader_of_mapping(struct task_struct *task, struct vm_area_struct *vma, void *data) {
    struct loader_file *l = data;
    l->d = BPF_CORE_READ(vma, vm_file, f_path.dentry);
    l->mnt = BPF_CORE_READ(vma, vm_file, f_path.mnt);
    return 0;
}

/* The program loader (PT_INTERP) the kernel mapped for the exec, by the file of the mapping at
 * AT_BASE: no system call opens it, so no other program would report it. */
static __always_inline void report_loader(struct task_struct *task, __u32 call_id, __u32 tgid) {
    __u64 base = loader_base(task);
    if (base == 0) return;
    struct loader_file l = {0, 0};
    long found = bpf_find_vma(bpf_get_current_task_btf(), base, loader_of_mapping, &l, 0);
    struct scratch *s = scratch_for(call_id, tgid, TEA_EBPF_LOADER);
    if (!s) return;
    s->e.call = TEA_EBPF_EXECVE;
    __u8 status = TEA_EBPF_WALK_NO_FILE;
    if (found == 0 && l.d && l.mnt) s->e.bytes[0] = walk_path(task, l.d, l.mnt, s->data, &status);
    s->e.walk[0] = status;
    send(s, 1);
}

SEC("raw_tp/sched_process_fork")
int on_fork(struct bpf_raw_tracepoint_args *ctx) {
    struct task_struct *parent = (struct task_struct *)ctx->args[0];
    struct task_struct *child = (struct task_struct *)ctx->args[1];
    __u32 ptgid = BPF_CORE_READ(parent, tgid);
    __u32 *call_id = bpf_map_lookup_elem(&tracked, &ptgid);
    if (!call_id) return 0;
    /* Added in the parent's context, before the child first runs: no child escapes by
     * forking fast. */
    __u32 ctgid = BPF_CORE_READ(child, tgid);
    __u32 id = *call_id;
    /* A child the full map cannot hold goes unseen: the call is then incomplete, never clean. */
    if (bpf_map_update_elem(&tracked, &ctgid, &id, BPF_ANY) != 0) count_lost(id);
    return 0;
}

SEC("raw_tp/sched_process_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx) {
    struct task_struct *task = (struct task_struct *)ctx->args[0];
    /* The last task of a descriptor table ending (its files are released after this point):
     * nothing can change the table any more, and its address may be reused. */
    struct files_struct *files = BPF_CORE_READ(task, files);
    if (files && BPF_CORE_READ(files, count.counter) == 1) {
        __u64 table = (__u64)files;
        bpf_map_delete_elem(&tables, &table);
    }
    __u32 tgid = BPF_CORE_READ(task, tgid);
    __u32 *call_id = bpf_map_lookup_elem(&tracked, &tgid);
    if (!call_id) return 0;
    if (BPF_CORE_READ(task, signal, live.counter) != 0) return 0;
    /* The call's owner gone: told here, where no pid reused since can be taken for it. */
    struct tea_ebpf_call_counts *c = bpf_map_lookup_elem(&calls, call_id);
    if (c && c->owner_tgid == tgid) c->owner_ended = 1;
    /* Forgotten when its whole group is gone, so that a reused pid is not taken for it. */
    bpf_map_delete_elem(&tracked, &tgid);
    return 0;
}

SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx) {
    struct task_struct *task = (struct task_struct *)ctx->args[0];
    struct linux_binprm *bprm = (struct linux_binprm *)ctx->args[2];
    __u32 tgid = BPF_CORE_READ(task, tgid);
    __u32 *call_id = bpf_map_lookup_elem(&tracked, &tgid);
    if (!call_id) return 0;
    struct scratch *s = scratch_for(*call_id, tgid, TEA_EBPF_EXEC);
    if (!s) return 0;
    s->e.call = TEA_EBPF_EXECVE;
    struct file *f = BPF_CORE_READ(bprm, file);
    __u8 status = 0;
    s->e.bytes[0] = walk_path(task, BPF_CORE_READ(f, f_path.dentry), BPF_CORE_READ(f, f_path.mnt),
                              s->data, &status);
    s->e.walk[0] = status;
    const char *filename = BPF_CORE_READ(bprm, filename);
    s->e.script = filename != BPF_CORE_READ(bprm, interp);
    long n = bpf_probe_read_kernel_str(s->data + TEA_EBPF_REGION, TEA_EBPF_NAMES, filename);
    s->e.walk[1] = n > 0 ? TEA_EBPF_WALK_ROOT : TEA_EBPF_WALK_NO_FILE;
    s->e.bytes[1] = n > 0 ? (__u16)n : 0;
    __u32 regions = 2;
    if (n > 0 && s->data[TEA_EBPF_REGION] != '/') {
        s->e.bytes[2] =
            walk_path(task, BPF_CORE_READ(task, fs, pwd.dentry), BPF_CORE_READ(task, fs, pwd.mnt),
                      s->data + 2 * TEA_EBPF_REGION, &status);
        s->e.walk[2] = status;
        regions = 3;
    }
    __u32 id = *call_id;
    send(s, regions);
    report_loader(task, id, tgid);
    return 0;
}

/* The system call's number in the one numbering, or 0 for one that is not reported. */
static __always_inline __u16 classify(long nr, __u8 abi) {
    if (abi == TEA_EBPF_ABI_I386) {
        switch (nr) {
            case 5:
                return TEA_EBPF_OPEN;
            case 295:
                return TEA_EBPF_OPENAT;
            case 437:
                return TEA_EBPF_OPENAT2;
            case 8:
                return TEA_EBPF_CREAT;
            case 342:
                return TEA_EBPF_OPEN_BY_HANDLE_AT;
            case 141:
                return TEA_EBPF_GETDENTS;
            case 220:
                return TEA_EBPF_GETDENTS64;
            case 85:
                return TEA_EBPF_READLINK;
            case 305:
                return TEA_EBPF_READLINKAT;
            case 39:
                return TEA_EBPF_MKDIR;
            case 296:
                return TEA_EBPF_MKDIRAT;
            case 14:
                return TEA_EBPF_MKNOD;
            case 297:
                return TEA_EBPF_MKNODAT;
            case 10:
                return TEA_EBPF_UNLINK;
            case 301:
                return TEA_EBPF_UNLINKAT;
            case 40:
                return TEA_EBPF_RMDIR;
            case 38:
                return TEA_EBPF_RENAME;
            case 302:
                return TEA_EBPF_RENAMEAT;
            case 353:
                return TEA_EBPF_RENAMEAT2;
            case 9:
                return TEA_EBPF_LINK;
            case 303:
                return TEA_EBPF_LINKAT;
            case 83:
                return TEA_EBPF_SYMLINK;
            case 304:
                return TEA_EBPF_SYMLINKAT;
            case 92:
                return TEA_EBPF_TRUNCATE;
            case 193:
                return TEA_EBPF_TRUNCATE; /* truncate64 */
            case 11:
                return TEA_EBPF_EXECVE;
            case 358:
                return TEA_EBPF_EXECVEAT;
            case 425:
                return TEA_EBPF_IO_URING_SETUP;
            case 6:
                return TEA_EBPF_CLOSE;
            case 63:
                return TEA_EBPF_DUP2;
            case 330:
                return TEA_EBPF_DUP3;
            case 436:
                return TEA_EBPF_CLOSE_RANGE;
        }
        return 0;
    }
    if (abi == TEA_EBPF_ABI_X32) {
        if (nr == 520) return TEA_EBPF_EXECVE;
        if (nr == 545) return TEA_EBPF_EXECVEAT;
    }
    switch (nr) {
        case 2:
            return TEA_EBPF_OPEN;
        case 257:
            return TEA_EBPF_OPENAT;
        case 437:
            return TEA_EBPF_OPENAT2;
        case 85:
            return TEA_EBPF_CREAT;
        case 304:
            return TEA_EBPF_OPEN_BY_HANDLE_AT;
        case 78:
            return TEA_EBPF_GETDENTS;
        case 217:
            return TEA_EBPF_GETDENTS64;
        case 89:
            return TEA_EBPF_READLINK;
        case 267:
            return TEA_EBPF_READLINKAT;
        case 83:
            return TEA_EBPF_MKDIR;
        case 258:
            return TEA_EBPF_MKDIRAT;
        case 133:
            return TEA_EBPF_MKNOD;
        case 259:
            return TEA_EBPF_MKNODAT;
        case 87:
            return TEA_EBPF_UNLINK;
        case 263:
            return TEA_EBPF_UNLINKAT;
        case 84:
            return TEA_EBPF_RMDIR;
        case 82:
            return TEA_EBPF_RENAME;
        case 264:
            return TEA_EBPF_RENAMEAT;
        case 316:
            return TEA_EBPF_RENAMEAT2;
        case 86:
            return TEA_EBPF_LINK;
        case 265:
            return TEA_EBPF_LINKAT;
        case 88:
            return TEA_EBPF_SYMLINK;
        case 266:
            return TEA_EBPF_SYMLINKAT;
        case 76:
            return TEA_EBPF_TRUNCATE;
        case 59:
            return TEA_EBPF_EXECVE;
        case 322:
            return TEA_EBPF_EXECVEAT;
        case 425:
            return TEA_EBPF_IO_URING_SETUP;
        case 3:
            return abi == TEA_EBPF_ABI_64 ? TEA_EBPF_REGISTER : TEA_EBPF_CLOSE;
        case 33:
            return TEA_EBPF_DUP2;
        case 292:
            return TEA_EBPF_DUP3;
        case 436:
            return TEA_EBPF_CLOSE_RANGE;
    }
    return 0;
}

static __always_inline __u64 arg(struct pt_regs *regs, __u8 abi, int i) {
    if (abi == TEA_EBPF_ABI_I386) {
        switch (i) {
            case 0:
                return (__u32)BPF_CORE_READ(regs, bx);
            case 1:
                return (__u32)BPF_CORE_READ(regs, cx);
            case 2:
                return (__u32)BPF_CORE_READ(regs, dx);
            case 3:
                return (__u32)BPF_CORE_READ(regs, si);
            default:
                return (__u32)BPF_CORE_READ(regs, di);
        }
    }
    switch (i) {
        case 0:
            return BPF_CORE_READ(regs, di);
        case 1:
            return BPF_CORE_READ(regs, si);
        case 2:
            return BPF_CORE_READ(regs, dx);
        case 3:
            return BPF_CORE_READ(regs, r10);
        default:
            return BPF_CORE_READ(regs, r8);
    }
}

/* The registers of a system call: its number, and where either ABI passes its arguments. */
struct call_regs {
    __u64 orig_ax, di, si, dx, r10, r8, bx, cx;
};
#define REGS_RUN 88
#define regs_min(f1, f2) min_u32(field_off(struct pt_regs, f1), field_off(struct pt_regs, f2))
#define regs_max(f1, f2) max_u32(field_end(struct pt_regs, f1), field_end(struct pt_regs, f2))

static __always_inline void read_regs(struct pt_regs *regs, struct call_regs *c) {
    const __u32 start = min_u32(min_u32(regs_min(orig_ax, di), regs_min(si, dx)),
                                min_u32(regs_min(r10, r8), regs_min(bx, cx)));
    const __u32 end = max_u32(max_u32(regs_max(orig_ax, di), regs_max(si, dx)),
                              max_u32(regs_max(r10, r8), regs_max(bx, cx)));
    __u64 run[REGS_RUN / 8];
    if (run_fits(REGS_RUN, start, end)) {
        read_run(run, regs, start, end);
        c->orig_ax = run_field(run, start, struct pt_regs, orig_ax, __u64);
        c->di = run_field(run, start, struct pt_regs, di, __u64);
        c->si = run_field(run, start, struct pt_regs, si, __u64);
        c->dx = run_field(run, start, struct pt_regs, dx, __u64);
        c->r10 = run_field(run, start, struct pt_regs, r10, __u64);
        c->r8 = run_field(run, start, struct pt_regs, r8, __u64);
        c->bx = run_field(run, start, struct pt_regs, bx, __u64);
        c->cx = run_field(run, start, struct pt_regs, cx, __u64);
    } else {
        c->orig_ax = BPF_CORE_READ(regs, orig_ax);
        c->di = BPF_CORE_READ(regs, di);
        c->si = BPF_CORE_READ(regs, si);
        c->dx = BPF_CORE_READ(regs, dx);
        c->r10 = BPF_CORE_READ(regs, r10);
        c->r8 = BPF_CORE_READ(regs, r8);
        c->bx = BPF_CORE_READ(regs, bx);
        c->cx = BPF_CORE_READ(regs, cx);
    }
}

/* Argument `i` of a system call of ABI `abi`, from its registers. */
static __always_inline __u64 arg_of(const struct call_regs *c, __u8 abi, int i) {
    if (abi == TEA_EBPF_ABI_I386) {
        switch (i) {
            case 0:
                return (__u32)c->bx;
            case 1:
                return (__u32)c->cx;
            case 2:
                return (__u32)c->dx;
            case 3:
                return (__u32)c->si;
            default:
                return (__u32)c->di;
        }
    }
    switch (i) {
        case 0:
            return c->di;
        case 1:
            return c->si;
        case 2:
            return c->dx;
        case 3:
            return c->r10;
        default:
            return c->r8;
    }
}

enum enter_kind { ENTER_OPEN = 1, ENTER_CLOSE, ENTER_DUP, ENTER_RANGE };

/* The calls sys_enter follows: opens, and those that take a descriptor from its number. */
static __always_inline __u8 enter_kind(long nr, __u8 abi) {
    if (abi == TEA_EBPF_ABI_I386) {
        switch (nr) {
            case 5:
            case 8:
            case 295:
            case 342:
            case 437:
                return ENTER_OPEN;
            case 6:
                return ENTER_CLOSE;
            case 63:
            case 330:
                return ENTER_DUP;
            case 436:
                return ENTER_RANGE;
        }
        return 0;
    }
    switch (nr) {
        case 2:
        case 85:
        case 257:
        case 304:
        case 437:
            return ENTER_OPEN;
        case 3:
            return ENTER_CLOSE;
        case 33:
        case 292:
            return ENTER_DUP;
        case 436:
            return ENTER_RANGE;
    }
    return 0;
}

/* A table's first state, kept out of the stack: the programs' deepest call chain needs the room. */
static const struct table_state empty_table = {};

static __always_inline struct table_state *table_of(__u64 table) {
    struct table_state *t = bpf_map_lookup_elem(&tables, &table);
    if (t) return t;
    (void)bpf_map_update_elem(&tables, &table, &empty_table, BPF_NOEXIST);
    return bpf_map_lookup_elem(&tables, &table);
}

/* The file a close or replacement is about to take from `fd`, reported as the process's. */
static __always_inline void report_displaced(struct task_struct *task, __u32 call_id, __u32 tgid,
                                             __u16 call, __u8 abi, long fd, struct file *f) {
    struct scratch *s = scratch_for(call_id, tgid, TEA_EBPF_OPENED);
    if (!s) return;
    s->e.call = call;
    s->e.abi = abi;
    s->e.ret = (__s32)fd;
    s->e.flags = TEA_EBPF_FLAG_DISPLACED;
    struct file_fields ff;
    read_file(f, &ff);
    s->e.file_flags = ff.flags;
    s->e.file_mode = ff.mode;
    __u8 status = 0;
    s->e.bytes[0] = walk_path(task, ff.dentry, ff.mnt, s->data, &status);
    s->e.walk[0] = status;
    send(s, 1);
}

/* The functions below are global (not inlined): the verifier checks each once, not at every call
 * site, which kept the programs' load near what it was before them. Their arguments are scalars;
 * kernel pointers travel as numbers and are read through bpf_probe_read_kernel. */

/* A close or replacement entering in a shared table: it takes a slot, marks itself and any
 * other running on its number contended, and reports the file it saw if an open is running.
 * `what`: the number, the call (bits 32 to 47) and the ABI (bits 48 to 55); `ids`: the call id
 * and the tgid (bits 32 to 63). */
__noinline int displacer_enters(__u64 task_addr, __u64 table, __u64 what, __u64 ids, __u32 tid) {
    struct task_struct *task = (struct task_struct *)task_addr;
    const __u32 fd = (__u32)what;
    const __u16 call = (__u16)(what >> 32);
    const __u8 abi = (__u8)(what >> 48);
    const __u32 call_id = (__u32)ids;
    const __u32 tgid = (__u32)(ids >> 32);
    struct table_state *t = bpf_map_lookup_elem(&tables, &table);
    if (!t) {
        count_lost(call_id);
        return 0;
    }
    struct displacer_flight d = {.table = table, .slot = -1};
    struct file *x = 0;
    if (call == TEA_EBPF_CLOSE_RANGE) {
        __sync_fetch_and_add(&t->unslotted, 1);
    } else {
        x = file_at(task, (int)fd);
        __u64 mine = SLOT_USED | fd | (x ? 0 : SLOT_BLIND);
        for (__u32 i = 0; i < DISPLACER_SLOTS; i++) {
            /* A slot without SLOT_USED is free, whatever flag a late mark left on it. */
            __u64 v = *(volatile __u64 *)&t->slot[i];
            if (v & SLOT_USED) continue;
            if (__sync_val_compare_and_swap(&t->slot[i], v, mine) == v) {
                d.slot = (__s32)i;
                break;
            }
        }
        if (d.slot < 0) {
            /* No slot free: blind, as a close_range is. */
            __sync_fetch_and_add(&t->unslotted, 1);
        } else {
            __u32 own = (__u32)d.slot & (DISPLACER_SLOTS - 1);
            for (__u32 j = 0; j < DISPLACER_SLOTS; j++) {
                if (j == own) continue;
                __u64 v = *(volatile __u64 *)&t->slot[j];
                /* Attack: two calls on one number, the second taking away what the first did
                 * not see (the open's file, installed between them): both are blind. */
                if ((v & SLOT_USED) && (__u32)v == fd) {
                    __sync_fetch_and_or(&t->slot[j], SLOT_CONTENDED);
                    __sync_fetch_and_or(&t->slot[own], SLOT_CONTENDED);
                }
            }
        }
    }
    __sync_fetch_and_add(&displacer_records, 1);
    if (bpf_map_update_elem(&displacer_flights, &tid, &d, BPF_ANY) != 0) {
        /* Not followed to its exit: the call cannot be vouched for. */
        __sync_fetch_and_add(&displacer_records, -1);
        count_lost(call_id);
        if (d.slot < 0)
            __sync_fetch_and_add(&t->unslotted, -1);
        else
            __sync_lock_test_and_set(&t->slot[(__u32)d.slot & (DISPLACER_SLOTS - 1)], 0);
        return 0;
    }
    /* Attack: a sibling that waits for the open's descriptor and swaps a decoy onto it before
     * sys_exit reads it. The file it takes away is reported while an open is running. */
    if (x && *(volatile __u32 *)&t->opens > 0)
        report_displaced(task, call_id, tgid, call, abi, fd, x);
    return 0;
}

/* A close or replacement returning: a blind one that may have taken a number away makes every
 * open it overlapped unverified. */
__noinline int displacer_returns(__u32 tid, long ret) {
    if (*(volatile __u64 *)&displacer_records == 0) return 0;
    struct displacer_flight *d = bpf_map_lookup_elem(&displacer_flights, &tid);
    if (!d) return 0;
    __u64 table = d->table;
    __s32 slot = d->slot;
    if (bpf_map_delete_elem(&displacer_flights, &tid) == 0)
        __sync_fetch_and_add(&displacer_records, -1);
    struct table_state *t = bpf_map_lookup_elem(&tables, &table);
    if (!t) return 0;
    __u32 i = (__u32)slot & (DISPLACER_SLOTS - 1);
    __u64 v = slot < 0 ? SLOT_BLIND : *(volatile __u64 *)&t->slot[i];
    /* Attack: a close whose flush fails (EIO) has still taken the number away; only EBADF says
     * that nothing was there. */
    if ((v & (SLOT_BLIND | SLOT_CONTENDED)) && ret != -EBADF_RET)
        __sync_fetch_and_add(&t->blind_gen, 1);
    if (slot < 0)
        __sync_fetch_and_add(&t->unslotted, -1);
    else
        __sync_lock_test_and_set(&t->slot[i], 0);
    return 0;
}

/* An open entering in a shared table. */
__noinline int open_enters(__u64 table, __u32 call_id, __u32 tid) {
    struct table_state *t = bpf_map_lookup_elem(&tables, &table);
    if (!t) {
        count_lost(call_id);
        return 0;
    }
    __sync_fetch_and_add(&t->opens, 1);
    struct open_flight o = {.table = table, .gen = __sync_fetch_and_add(&t->blind_gen, 0)};
    /* Counted first: the return of this thread's open then looks its record up. */
    __sync_fetch_and_add(&open_records, 1);
    if (bpf_map_update_elem(&open_flights, &tid, &o, BPF_ANY) != 0) {
        __sync_fetch_and_add(&open_records, -1);
        __sync_fetch_and_add(&t->opens, -1);
        count_lost(call_id);
    }
    return 0;
}

/* An open returning, after its file was read at `fd` (-1: none): 1 when a blind close or
 * replacement may have displaced that file. */
__noinline int open_returns(__u32 tid, long fd) {
    if (*(volatile __u64 *)&open_records == 0) return 0;
    struct open_flight *o = bpf_map_lookup_elem(&open_flights, &tid);
    if (!o) return 0;
    __u64 table = o->table;
    __u64 gen = o->gen;
    if (bpf_map_delete_elem(&open_flights, &tid) == 0) __sync_fetch_and_add(&open_records, -1);
    struct table_state *t = bpf_map_lookup_elem(&tables, &table);
    if (!t) return fd >= 0;
    int unverified = 0;
    if (fd >= 0) {
        for (__u32 j = 0; j < DISPLACER_SLOTS; j++) {
            __u64 v = *(volatile __u64 *)&t->slot[j];
            if ((v & SLOT_USED) && (__u32)v == (__u32)fd && (v & (SLOT_BLIND | SLOT_CONTENDED)))
                unverified = 1;
        }
        if (*(volatile __u32 *)&t->unslotted > 0) unverified = 1;
        if (__sync_fetch_and_add(&t->blind_gen, 0) != gen) unverified = 1;
    }
    __sync_fetch_and_add(&t->opens, -1);
    return unverified;
}

SEC("raw_tp/sys_enter")
int on_sys_enter(struct bpf_raw_tracepoint_args *ctx) {
    long id = (int)ctx->args[1];
    /* The number first: every system call of the machine passes here. */
    if (!enter_kind(id & ~X32_SYSCALL_BIT, TEA_EBPF_ABI_64) && !enter_kind(id, TEA_EBPF_ABI_I386))
        return 0;
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tgid = pid_tgid >> 32;
    __u32 *tracked_id = bpf_map_lookup_elem(&tracked, &tgid);
    if (!tracked_id) return 0;
    __u32 call_id = *tracked_id;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u8 abi = TEA_EBPF_ABI_64;
    long nr = id;
    if (BPF_CORE_READ(task, thread_info.status) & TS_COMPAT) {
        abi = TEA_EBPF_ABI_I386;
    } else if (id & X32_SYSCALL_BIT) {
        abi = TEA_EBPF_ABI_X32;
        nr &= ~X32_SYSCALL_BIT;
    }
    __u8 kind = enter_kind(nr, abi);
    if (!kind) return 0;
    struct files_struct *files = BPF_CORE_READ(task, files);
    /* A table no other task holds cannot change under the call. */
    if (!files || BPF_CORE_READ(files, count.counter) <= 1) return 0;
    __u64 table = (__u64)files;
    if (!table_of(table)) {
        count_lost(call_id);
        return 0;
    }
    __u32 tid = (__u32)pid_tgid;
    if (kind == ENTER_OPEN) {
        open_enters(table, call_id, tid);
        return 0;
    }
    struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
    __u32 fd = 0;
    __u16 call = TEA_EBPF_CLOSE_RANGE;
    if (kind != ENTER_RANGE) {
        fd = (__u32)arg(regs, abi, kind == ENTER_CLOSE ? 0 : 1);
        /* dup2 onto its own number changes nothing (dup3 refuses it). */
        if (kind == ENTER_DUP && (__u32)arg(regs, abi, 0) == fd) return 0;
        call = kind == ENTER_CLOSE        ? TEA_EBPF_CLOSE
               : (nr == 292 || nr == 330) ? TEA_EBPF_DUP3
                                          : TEA_EBPF_DUP2;
    }
    displacer_enters((__u64)task, table, fd | ((__u64)call << 32) | ((__u64)abi << 48),
                     call_id | ((__u64)tgid << 32), tid);
    return 0;
}

/* The path string a call named, as it is in the process's memory when the call returns, into
 * `str`, and the directory it is relative to into `base`: 0 when the string cannot be read. */
static __always_inline long read_name(struct task_struct *task, long dirfd, __u64 user_path,
                                      char *str, char *base, __u16 *base_bytes, __u8 *base_walk) {
    long n = bpf_probe_read_user_str(str, TEA_EBPF_NAMES, (const void *)user_path);
    if (n <= 0) return 0;
    if (str[0] != '/') {
        struct dentry *d = 0;
        struct vfsmount *m = 0;
        if ((int)dirfd == AT_FDCWD) {
            d = BPF_CORE_READ(task, fs, pwd.dentry);
            m = BPF_CORE_READ(task, fs, pwd.mnt);
        } else {
            struct file *f = file_at(task, (int)dirfd);
            if (f) {
                d = BPF_CORE_READ(f, f_path.dentry);
                m = BPF_CORE_READ(f, f_path.mnt);
            }
        }
        *base_bytes = walk_path(task, d, m, base, base_walk);
    }
    return n;
}

/* A file the process reached through a descriptor: its path as the kernel knows it. In a
 * descriptor table that another task shares, that task can put another file on the number
 * between the open and this program (dup2, or close and dup): the string the open named is then
 * sent too, so that it is judged as well, as the strace observer judges it. */
static __always_inline void report_file(struct task_struct *task, __u32 call_id, __u32 tgid,
                                        __u16 kind, __u16 call, __u8 abi, long ret, long fd,
                                        long dirfd, __u64 user_path) {
    int users = 0;
    struct file *f = file_in_table(task, fd, &users);
    /* Read after the file: a close or replacement that took it away shows from here. */
    const int unverified =
        kind == TEA_EBPF_OPENED ? open_returns((__u32)bpf_get_current_pid_tgid(), fd) : 0;
    struct scratch *s = scratch_for(call_id, tgid, kind);
    if (!s) return;
    s->e.call = call;
    if (unverified) s->e.flags = TEA_EBPF_FLAG_UNVERIFIED;
    s->e.abi = abi;
    s->e.ret = (__s32)ret;
    if (f) {
        struct file_fields ff;
        read_file(f, &ff);
        s->e.file_flags = ff.flags;
        s->e.file_mode = ff.mode;
        __u8 status = 0;
        s->e.bytes[0] = walk_path(task, ff.dentry, ff.mnt, s->data, &status);
        s->e.walk[0] = status;
    } else {
        /* Closed again by another task before this program ran. */
        s->e.walk[0] = TEA_EBPF_WALK_NO_FILE;
    }
    if (user_path == 0 || users <= 1) {
        send(s, 1);
        return;
    }
    long n = read_name(task, dirfd, user_path, s->data + TEA_EBPF_REGION,
                       s->data + 2 * TEA_EBPF_REGION, &s->e.bytes[2], &s->e.walk[2]);
    s->e.walk[1] = n > 0 ? TEA_EBPF_WALK_ROOT : TEA_EBPF_WALK_NO_FILE;
    s->e.bytes[1] = n > 0 ? (__u16)n : 0;
    send(s, s->e.bytes[2] > 0 ? 3 : 2);
}

/* A call that names a path: the string as the kernel took it (read back when the call returns)
 * and the directory it is relative to. */
static __always_inline void report_named(struct task_struct *task, __u32 call_id, __u32 tgid,
                                         __u16 call, __u8 abi, long ret, __u8 role, long dirfd,
                                         __u64 user_path, __u32 flags) {
    struct scratch *s = scratch_for(call_id, tgid, TEA_EBPF_NAMED);
    if (!s) return;
    s->e.call = call;
    s->e.abi = abi;
    s->e.role = role;
    s->e.ret = (__s32)ret;
    s->e.file_flags = flags;
    long n = read_name(task, dirfd, user_path, s->data + TEA_EBPF_REGION, s->data, &s->e.bytes[0],
                       &s->e.walk[0]);
    s->e.walk[1] = n > 0 ? TEA_EBPF_WALK_ROOT : TEA_EBPF_WALK_NO_FILE;
    s->e.bytes[1] = n > 0 ? (__u16)n : 0;
    send(s, 2);
}

/* What a system call's exit reports, worked out first so that each reporting function has one
 * call site: the verifier then walks each of them once, not once per system call. */
struct report {
    __u16 kind; /* TEA_EBPF_OPENED, TEA_EBPF_LISTED or TEA_EBPF_NAMED; 0: nothing */
    __u8 names; /* named paths: 1, or 2 for a rename */
    long fd;    /* the descriptor whose file is reported */
    long dirfd[2];
    __u64 path[2];
    __u8 role[2];
    __u32 flags;
};

SEC("raw_tp/sys_exit")
int on_sys_exit(struct bpf_raw_tracepoint_args *ctx) {
    struct call_regs regs;
    read_regs((struct pt_regs *)ctx->args[0], &regs);
    long ret = (long)ctx->args[1];
    /* The kernel runs the low 32 bits of the number (and takes a descriptor as an int): a number
     * with high bits set runs the same call, and must be classified as that call. */
    long nr = (int)regs.orig_ax;
    /* The number first, under every ABI it could be of: every system call of the machine passes
     * here, and most are none of ours. */
    if (!classify(nr & ~X32_SYSCALL_BIT, TEA_EBPF_ABI_X32) && !classify(nr, TEA_EBPF_ABI_I386))
        return 0;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u8 abi = TEA_EBPF_ABI_64;
    if (BPF_CORE_READ(task, thread_info.status) & TS_COMPAT)
        abi = TEA_EBPF_ABI_I386;
    else if (nr & X32_SYSCALL_BIT) {
        abi = TEA_EBPF_ABI_X32;
        nr &= ~X32_SYSCALL_BIT;
    }
    __u16 call = classify(nr, abi);
    if (!call) return 0;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    /* Every close settles what its entry recorded, the register call's too. */
    if (call == TEA_EBPF_REGISTER || (call >= TEA_EBPF_CLOSE && call <= TEA_EBPF_CLOSE_RANGE))
        displacer_returns(tid, ret);
    if (call == TEA_EBPF_REGISTER &&
        ((int)arg_of(&regs, abi, 0) != -1 || arg_of(&regs, abi, 1) != TEA_EBPF_MAGIC))
        call = TEA_EBPF_CLOSE;
    if (call == TEA_EBPF_REGISTER) {
        __u64 token = arg_of(&regs, abi, 2);
        __u32 *pending_id = bpf_map_lookup_elem(&pending, &token);
        if (!pending_id) return 0;
        __u32 id = *pending_id;
        /* A token claims its call once: whoever comes second is not tracked. */
        if (bpf_map_delete_elem(&pending, &token) != 0) return 0;
        struct tea_ebpf_call_counts *c = bpf_map_lookup_elem(&calls, &id);
        /* A claimant the full map cannot hold goes unseen: the call is incomplete, never clean. */
        if (bpf_map_update_elem(&tracked, &tgid, &id, BPF_ANY) != 0) {
            count_lost(id);
            return 0;
        }
        if (c) c->owner_tgid = tgid;
        return 0;
    }
    if (call >= TEA_EBPF_CLOSE && call <= TEA_EBPF_CLOSE_RANGE) return 0;
    const bool open_call = call <= TEA_EBPF_OPEN_BY_HANDLE_AT;
    __u32 *tracked_id = bpf_map_lookup_elem(&tracked, &tgid);
    if (!tracked_id) {
        if (open_call) (void)open_returns(tid, -1);
        return 0;
    }
    __u32 call_id = *tracked_id;

    struct report r = {.names = 1, .dirfd = {AT_FDCWD, AT_FDCWD}};
    switch (call) {
        case TEA_EBPF_OPEN:
        case TEA_EBPF_CREAT:
            r.kind = ret >= 0 ? TEA_EBPF_OPENED : TEA_EBPF_NAMED;
            r.fd = ret;
            r.path[0] = arg_of(&regs, abi, 0);
            r.flags = call == TEA_EBPF_CREAT ? 01101 /* O_CREAT|O_WRONLY|O_TRUNC */
                                             : (__u32)arg_of(&regs, abi, 1);
            break;
        case TEA_EBPF_OPENAT:
        case TEA_EBPF_OPENAT2:
            r.kind = ret >= 0 ? TEA_EBPF_OPENED : TEA_EBPF_NAMED;
            r.fd = ret;
            r.dirfd[0] = (int)arg_of(&regs, abi, 0);
            r.path[0] = arg_of(&regs, abi, 1);
            r.flags = (__u32)arg_of(&regs, abi, 2);
            if (call == TEA_EBPF_OPENAT2) {
                __u64 how_flags = 0;
                bpf_probe_read_user(&how_flags, sizeof(how_flags),
                                    (const void *)arg_of(&regs, abi, 2));
                r.flags = (__u32)how_flags;
            }
            break;
        case TEA_EBPF_OPEN_BY_HANDLE_AT:
            /* A failed one names no path; a handle that opened is judged by its file. */
            if (ret >= 0) {
                r.kind = TEA_EBPF_OPENED;
                r.fd = ret;
            }
            break;
        case TEA_EBPF_GETDENTS:
        case TEA_EBPF_GETDENTS64:
            if (ret >= 0) {
                r.kind = TEA_EBPF_LISTED;
                r.fd = (int)arg_of(&regs, abi, 0);
            }
            break;
        case TEA_EBPF_EXECVE:
            /* A successful one is reported by sched_process_exec, with the file it runs. */
            if (ret < 0) {
                r.kind = TEA_EBPF_NAMED;
                r.path[0] = arg_of(&regs, abi, 0);
            }
            break;
        case TEA_EBPF_EXECVEAT:
            if (ret < 0) {
                r.kind = TEA_EBPF_NAMED;
                r.dirfd[0] = (int)arg_of(&regs, abi, 0);
                r.path[0] = arg_of(&regs, abi, 1);
            }
            break;
        case TEA_EBPF_IO_URING_SETUP:
            if (ret >= 0) {
                struct tea_ebpf_call_counts *c = bpf_map_lookup_elem(&calls, &call_id);
                if (c) __sync_fetch_and_add(&c->io_uring, 1);
            }
            return 0;
        case TEA_EBPF_READLINK:
        case TEA_EBPF_MKDIR:
        case TEA_EBPF_MKNOD:
        case TEA_EBPF_UNLINK:
        case TEA_EBPF_RMDIR:
        case TEA_EBPF_TRUNCATE:
            r.kind = TEA_EBPF_NAMED;
            r.path[0] = arg_of(&regs, abi, 0);
            break;
        case TEA_EBPF_READLINKAT:
        case TEA_EBPF_MKDIRAT:
        case TEA_EBPF_MKNODAT:
        case TEA_EBPF_UNLINKAT:
            r.kind = TEA_EBPF_NAMED;
            r.dirfd[0] = (int)arg_of(&regs, abi, 0);
            r.path[0] = arg_of(&regs, abi, 1);
            r.flags = (__u32)arg_of(&regs, abi, 2);
            break;
        case TEA_EBPF_RENAME:
            r.kind = TEA_EBPF_NAMED;
            r.names = 2;
            r.path[0] = arg_of(&regs, abi, 0);
            r.role[0] = TEA_EBPF_ROLE_OLD;
            r.path[1] = arg_of(&regs, abi, 1);
            r.role[1] = TEA_EBPF_ROLE_NEW;
            break;
        case TEA_EBPF_RENAMEAT:
        case TEA_EBPF_RENAMEAT2:
            r.kind = TEA_EBPF_NAMED;
            r.names = 2;
            r.dirfd[0] = (int)arg_of(&regs, abi, 0);
            r.path[0] = arg_of(&regs, abi, 1);
            r.role[0] = TEA_EBPF_ROLE_OLD;
            r.dirfd[1] = (int)arg_of(&regs, abi, 2);
            r.path[1] = arg_of(&regs, abi, 3);
            r.role[1] = TEA_EBPF_ROLE_NEW;
            break;
        case TEA_EBPF_LINK:
        case TEA_EBPF_SYMLINK:
            /* The new name is what the call makes. */
            r.kind = TEA_EBPF_NAMED;
            r.path[0] = arg_of(&regs, abi, 1);
            r.role[0] = TEA_EBPF_ROLE_NEW;
            break;
        case TEA_EBPF_LINKAT:
            r.kind = TEA_EBPF_NAMED;
            r.dirfd[0] = (int)arg_of(&regs, abi, 2);
            r.path[0] = arg_of(&regs, abi, 3);
            r.role[0] = TEA_EBPF_ROLE_NEW;
            break;
        case TEA_EBPF_SYMLINKAT:
            r.kind = TEA_EBPF_NAMED;
            r.dirfd[0] = (int)arg_of(&regs, abi, 1);
            r.path[0] = arg_of(&regs, abi, 2);
            r.role[0] = TEA_EBPF_ROLE_NEW;
            break;
    }
    if (open_call && r.kind != TEA_EBPF_OPENED) (void)open_returns(tid, -1);
    if (r.kind == TEA_EBPF_OPENED || r.kind == TEA_EBPF_LISTED) {
        report_file(task, call_id, tgid, r.kind, call, abi, ret, r.fd, r.dirfd[0], r.path[0]);
    } else if (r.kind == TEA_EBPF_NAMED) {
        for (__u32 i = 0; i < 2; i++) {
            if (i >= r.names) break;
            report_named(task, call_id, tgid, call, abi, ret, r.role[i & 1], r.dirfd[i & 1],
                         r.path[i & 1], r.flags);
        }
    }
    return 0;
}
