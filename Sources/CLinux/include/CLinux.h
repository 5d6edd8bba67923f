// Linux syscalls that Swift's Glibc module does not export, and wrappers for variadic C calls.
// Keep this tiny: declarations and static inline shims only.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/// `open(2)` without the variadic mode argument (Swift cannot call variadic C functions).
int clinux_open(const char *path, int flags, mode_t mode);

/// `flock(2)` and `stat(2)`, which Swift hides behind `struct flock` and `struct stat` of the same names.
static inline int clinux_flock(int fd, int operation) { return flock(fd, operation); }
static inline int clinux_stat(const char *path, struct stat *info) { return stat(path, info); }

/// `malloc_trim(3)`: returns freed memory of every malloc arena to the kernel (glibc; not in Swift's Glibc module).
static inline int clinux_malloc_trim(size_t pad) { return malloc_trim(pad); }

/// `fcntl(fd, cmd, arg)` with an int argument.
int clinux_fcntl_int(int fd, int cmd, int arg);

/// `fcntl(fd, cmd)` without an argument (F_GETFL, F_GETFD).
int clinux_fcntl_get(int fd, int cmd);

/// `pipe2(2)` (a GNU extension, hidden from Swift's Glibc module).
int clinux_pipe2(int fds[2], int flags);

/// `pthread_setname_np(3)` (a GNU extension) for the calling thread; `name` at most 15 bytes.
int clinux_set_thread_name(const char *name);

/// The calling thread's errno.
static inline int clinux_errno(void) { return errno; }

// epoll's event bits are enum constants re-#defined as themselves, which Swift imports awkwardly; and
// `struct epoll_event` is packed on x86_64. Constants and accessors here keep Swift away from both.
static const uint32_t CLINUX_EPOLLIN = EPOLLIN;
static const uint32_t CLINUX_EPOLLOUT = EPOLLOUT;
static const uint32_t CLINUX_EPOLLERR = EPOLLERR;
static const uint32_t CLINUX_EPOLLHUP = EPOLLHUP;
static const uint32_t CLINUX_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t CLINUX_EPOLLPRI = EPOLLPRI;

/// `epoll_ctl` with the event built here, carrying `token` in `data.u64`.
static inline int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

/// The size of one `struct epoll_event` as C lays it out (12 bytes on x86_64, 16 elsewhere).
static inline size_t clinux_epoll_event_size(void) { return sizeof(struct epoll_event); }

/// The event bits of `events[index]`.
static inline uint32_t clinux_epoll_event_bits(const struct epoll_event *events, int index) {
    return events[index].events;
}

/// The token (`data.u64`) of `events[index]`.
static inline uint64_t clinux_epoll_event_token(const struct epoll_event *events, int index) {
    return events[index].data.u64;
}

/// Arms (`nanoseconds` > 0) or disarms (0) a timerfd at an absolute `CLOCK_MONOTONIC` time, one-shot.
static inline int clinux_timerfd_arm_absolute(int fd, uint64_t nanoseconds) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof(spec));
    spec.it_value.tv_sec = (time_t)(nanoseconds / 1000000000ull);
    spec.it_value.tv_nsec = (long)(nanoseconds % 1000000000ull);
    return timerfd_settime(fd, nanoseconds == 0 ? 0 : TFD_TIMER_ABSTIME, &spec, NULL);
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
static inline uint64_t clinux_monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/// The size of one `struct signalfd_siginfo` (128 bytes).
static inline size_t clinux_signalfd_siginfo_size(void) { return sizeof(struct signalfd_siginfo); }

/// The signal number in a `struct signalfd_siginfo` read from a signalfd.
static inline int clinux_signalfd_siginfo_signo(const void *info) {
    return (int)((const struct signalfd_siginfo *)info)->ssi_signo;
}

/// Whether the kernel considers the system clock synchronised (NTP/PTP/RTC discipline): 1 yes, 0 no, -1 unknown.
int clinux_clock_synchronized(void);

/// Turns on `SO_TIMESTAMPNS` for `fd`: every datagram then carries the kernel's `CLOCK_REALTIME` time of its
/// arrival in the queue (`SCM_TIMESTAMPNS`; on `AF_UNIX` sockets, the moment the peer's `send` queued it).
static inline int clinux_enable_receive_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
}

/// One datagram received by `recvmsg(2)` with its kernel arrival time (see ``clinux_receive_timestamped``).
typedef struct {
    /// Bytes received (0: end of file), or -1 with `error` set.
    ssize_t count;
    int error;
    /// 1 when the message carried an `SCM_TIMESTAMPNS` time (then `seconds`/`nanoseconds` hold it), else 0.
    int stamped;
    /// 1 when the datagram was longer than the buffer (`MSG_TRUNC`): the rest was discarded.
    int truncated;
    /// Descriptors a peer passed along (`SCM_RIGHTS`), closed here unread.
    int closedDescriptors;
    int64_t seconds;
    int64_t nanoseconds;
} clinux_timestamped_datagram;

/// `recvmsg(2)` of one datagram into `buffer`, non-blocking, retrying `EINTR`, with the `SCM_TIMESTAMPNS` time
/// when the socket has `SO_TIMESTAMPNS` on. Any descriptor a peer passes with the datagram is closed at once (a
/// plain `read` discards them too); other control messages are ignored.
clinux_timestamped_datagram clinux_receive_timestamped(int fd, void *buffer, size_t length);

/// Most datagrams one ``clinux_receive_timestamped_batch`` call receives.
#define CLINUX_DATAGRAM_BATCH_MAX 16

/// `recvmmsg(2)` of up to `count` (at most ``CLINUX_DATAGRAM_BATCH_MAX``) datagrams, non-blocking, retrying `EINTR`:
/// datagram `i` goes to `buffers + i * slot` (at most `slot` bytes) and its size, time and flags to `out[i]`, as
/// ``clinux_receive_timestamped`` reports them. One system call reads whatever is queued, up to `count`.
///
/// Returns the number of datagrams received (the last has `count` 0 if the stream ended), or -1 with `errno` set
/// (`EAGAIN`: nothing queued).
int clinux_receive_timestamped_batch(int fd, void *buffers, size_t slot, unsigned int count,
                                     clinux_timestamped_datagram *out);

/// `TCP_CORK` on (1) or off (0): while on, the kernel holds partial segments back and sends full ones; turning it
/// off sends what is held at once.
static inline int clinux_set_tcp_cork(int fd, int on) {
    return setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}
