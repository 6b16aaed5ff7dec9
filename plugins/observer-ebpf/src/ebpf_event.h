/* The records the eBPF observer's kernel programs hand to the plugin through the ring buffer, and
 * the system calls they tell apart. Included by the BPF programs (after vmlinux.h) and by the
 * plugin (after <linux/types.h>), so both read one layout. */
#ifndef TEA_EBPF_EVENT_H
#define TEA_EBPF_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A path is kept as the names the kernel's walk met, leaf first, each ending in a NUL: a region
 * of at most TEA_EBPF_NAMES bytes. A region holds PATH_MAX bytes of names and room for the
 * longest name (255 bytes and its NUL) past that, so that each name is written with a constant
 * bound. */
#define TEA_EBPF_NAMES 4096
#define TEA_EBPF_NAME_MAX 256
#define TEA_EBPF_REGION (TEA_EBPF_NAMES + TEA_EBPF_NAME_MAX)

/* What an event reports. */
enum tea_ebpf_kind {
    TEA_EBPF_OPENED = 1, /* an open-like call that installed a descriptor: region 0 is its file;
                            in a descriptor table another task shares, region 1 is the string
                            the call named and region 2 the directory it is relative to */
    TEA_EBPF_NAMED = 2,  /* a call that names a path (a failed open, readlink, a name change):
                            region 0 is the base the string is relative to, region 1 the string */
    TEA_EBPF_LISTED = 3, /* getdents on a descriptor: region 0 is the directory's file */
    TEA_EBPF_EXEC = 4,   /* an exec that succeeded: region 0 is the file the kernel runs, region 1
                            the name it was asked for, region 2 the working directory when that
                            name is relative */
    TEA_EBPF_LOADER = 5, /* the program loader (PT_INTERP) the kernel mapped for that exec, sent
                            after it: region 0 is the loader's file; walk NO_FILE when the
                            mapping could not be found */
};

/* How a walk of the kernel's dentries ended. */
enum tea_ebpf_walk {
    TEA_EBPF_WALK_NONE = 0,     /* no walk was made (an absolute string needs no base) */
    TEA_EBPF_WALK_ROOT = 1,     /* it reached the process's root: the path is complete */
    TEA_EBPF_WALK_OUTSIDE = 2,  /* it ended at a mount or a dentry that does not lead to the
                                   process's root (a detached mount, another namespace) */
    TEA_EBPF_WALK_TOO_LONG = 3, /* more names or more bytes than the walk keeps */
    TEA_EBPF_WALK_PSEUDO = 4,   /* the file lives on a kernel-internal mount (a pipe, a socket, an
                                   anonymous inode, a memfd): no file of the file system */
    TEA_EBPF_WALK_NO_FILE = 5,  /* no file at the descriptor, or the string could not be read */
};

/* The system calls the programs report, as one numbering for every ABI. */
enum tea_ebpf_call {
    TEA_EBPF_OPEN = 1,
    TEA_EBPF_OPENAT,
    TEA_EBPF_OPENAT2,
    TEA_EBPF_CREAT,
    TEA_EBPF_OPEN_BY_HANDLE_AT,
    TEA_EBPF_GETDENTS,
    TEA_EBPF_GETDENTS64,
    TEA_EBPF_READLINK,
    TEA_EBPF_READLINKAT,
    TEA_EBPF_MKDIR,
    TEA_EBPF_MKDIRAT,
    TEA_EBPF_MKNOD,
    TEA_EBPF_MKNODAT,
    TEA_EBPF_UNLINK,
    TEA_EBPF_UNLINKAT,
    TEA_EBPF_RMDIR,
    TEA_EBPF_RENAME,
    TEA_EBPF_RENAMEAT,
    TEA_EBPF_RENAMEAT2,
    TEA_EBPF_LINK,
    TEA_EBPF_LINKAT,
    TEA_EBPF_SYMLINK,
    TEA_EBPF_SYMLINKAT,
    TEA_EBPF_TRUNCATE,
    TEA_EBPF_EXECVE,
    TEA_EBPF_EXECVEAT,
    TEA_EBPF_IO_URING_SETUP,
    TEA_EBPF_REGISTER, /* the plugin's enter program claiming its call (a close(-1) with a token) */
    /* Calls that take a descriptor away from its number (TEA_EBPF_FLAG_DISPLACED). */
    TEA_EBPF_CLOSE,
    TEA_EBPF_DUP2,
    TEA_EBPF_DUP3,
    TEA_EBPF_CLOSE_RANGE,
    TEA_EBPF_CALL_END
};

/* The ABI a call came through. */
enum tea_ebpf_abi {
    TEA_EBPF_ABI_64 = 0,
    TEA_EBPF_ABI_I386 = 1,
    TEA_EBPF_ABI_X32 = 2,
};

/* Which of a call's names an event reports: a rename reports its old and its new name apart. */
enum tea_ebpf_role {
    TEA_EBPF_ROLE_ONLY = 0,
    TEA_EBPF_ROLE_OLD = 1, /* rename's old name */
    TEA_EBPF_ROLE_NEW = 2, /* rename's new name */
};

/* What an event's flags say. */
enum tea_ebpf_flag {
    /* An open in a shared descriptor table during which another task closed or replaced a
       descriptor in a way the programs could not follow: the file at the number it returned may
       not be the one it opened. */
    TEA_EBPF_FLAG_UNVERIFIED = 1,
    /* (TEA_EBPF_OPENED, call close, dup2 or dup3) the file another task's call took away from its
       number while an open of the table was running: it may be the file that open made. */
    TEA_EBPF_FLAG_DISPLACED = 2,
};

struct tea_ebpf_event {
    __u32 size; /* of the whole record, header included */
    __u32 call_id;
    __u32 tgid;
    __s32 ret; /* the call's return: a descriptor or -errno */
    __u16 kind;
    __u16 call; /* enum tea_ebpf_call */
    __u8 abi;
    __u8 role;
    __u8 walk[3];     /* enum tea_ebpf_walk, per region */
    __u8 script;      /* an exec whose file is an interpreter the kernel chose (#!, binfmt_misc) */
    __u16 bytes[3];   /* the bytes each region holds */
    __u32 file_flags; /* the opened file's f_flags, or the flags argument of a failed open */
    __u32 file_mode;  /* the opened file's f_mode */
    __u32 flags;      /* enum tea_ebpf_flag */
    /* then the regions, one after another, each of its bytes[] */
};

/* What each call's slot of the per-call map counts, and who claimed the call. */
struct tea_ebpf_call_counts {
    __u64 lost;        /* records the ring buffer had no room for, children the map could not
                          hold */
    __u64 io_uring;    /* io_uring instances the call set up: their opens pass no system call */
    __u32 owner_tgid;  /* the process that claimed the call's token; 0 while it is unclaimed */
    __u32 owner_ended; /* 1 once that process has ended: a call never collected is then
                          abandoned, and its slot is reclaimed at the next registration */
};

/* The register call's magic: close(-1, TEA_EBPF_MAGIC, token) fails with EBADF for anyone, and
 * only the enter program holding a pending token makes it. */
#define TEA_EBPF_MAGIC 0x7465612d65627066ULL /* "tea-ebpf" */

#endif
